-- ledger_seen: an incremental release's ledger of the rows it has released: each row's
-- fingerprint (over the QIs and the columns released verbatim) and how many rows carry it.
-- Slots: __seen (the ledger table made), __rows (the released rows, aliased s),
-- __fingerprint (the fingerprint of a row of s). Parameters: none.
CREATE TABLE __seen AS
SELECT __fingerprint AS sbc_fingerprint, COUNT(*) AS sbc_rows
FROM __rows AS s
GROUP BY 1
