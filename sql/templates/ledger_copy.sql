-- ledger_copy: the rows of one ledger added to another (the ledger of the classes a refresh
-- formed among its new rows, added to the release's).
-- Slots: __into, __source (ledgers of released rows). Parameters: none.
INSERT INTO __into
SELECT sbc_fingerprint, sbc_rows FROM __source
