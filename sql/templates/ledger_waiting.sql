-- ledger_waiting: a refresh's rows that wait, written to the release's pending table (which
-- the refresh emptied first): per fingerprint and reason, how many.
-- Slots: __pending (the pending table), __unseen (the refresh's unseen rows, aliased u),
-- __waiting (sbc_row, reason: each waiting row's number and why). Parameters: none.
INSERT INTO __pending
SELECT u.sbc_fingerprint, COUNT(*), w.reason
FROM __unseen AS u
JOIN __waiting AS w ON w.sbc_row = u.sbc_row
GROUP BY u.sbc_fingerprint, w.reason
