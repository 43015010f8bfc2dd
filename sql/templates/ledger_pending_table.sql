-- ledger_pending_table: the empty table of an incremental release's pending rows: the
-- source's rows it has not released yet, by fingerprint, how many carry it and why they
-- wait. Never published.
-- Slots: __pending (the table made). Parameters: none.
CREATE TABLE __pending (
  sbc_fingerprint VARCHAR,
  sbc_rows BIGINT,
  reason VARCHAR
)
