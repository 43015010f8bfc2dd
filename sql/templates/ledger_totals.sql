-- ledger_totals: one row, the rows an incremental release's ledger counts released and those
-- its pending table counts, and the largest version its row table numbers.
-- Slots: __seen, __pending (the ledger's tables), __rows (the row table). Parameters: none.
SELECT
  (SELECT COALESCE(SUM(sbc_rows), 0) FROM __seen) AS seen,
  (SELECT COALESCE(SUM(sbc_rows), 0) FROM __pending) AS pending,
  (SELECT MAX(release_version) FROM __rows) AS last_version
