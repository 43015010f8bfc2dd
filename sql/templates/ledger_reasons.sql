-- ledger_reasons: pending rows added to a release's pending table under one reason (those
-- the clustering of a refresh's new rows left out).
-- Slots: __into (the pending table), __source (a pending table). Parameters: $reason.
INSERT INTO __into
SELECT sbc_fingerprint, sbc_rows, $reason FROM __source
