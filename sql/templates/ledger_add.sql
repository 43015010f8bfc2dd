-- ledger_add: a refresh's released rows added to the release's ledger of released rows, a
-- row per fingerprint and count (a fingerprint the ledger holds already is counted again:
-- the ledger's readers add its counts up).
-- Slots: __seen (the ledger), __unseen (the refresh's unseen rows, aliased u), __placed
-- (sbc_row: the numbers of the unseen rows released). Parameters: none.
INSERT INTO __seen
SELECT u.sbc_fingerprint, COUNT(*)
FROM __unseen AS u
JOIN __placed AS p ON p.sbc_row = u.sbc_row
GROUP BY u.sbc_fingerprint
