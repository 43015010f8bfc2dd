-- ledger_unseen: the source's rows an incremental release has not released (new rows, and
-- those pending), as a table of their own: every source column, the row's fingerprint and
-- a row number. Of the rows that share a fingerprint, those beyond the ledger's count are
-- unseen (which of them is immaterial: they are alike on every column the release holds).
-- Slots: __unseen (the table made), __source (the input, aliased s), __seen (the ledger of
-- released rows, whose fingerprints may repeat: their counts add up), __fingerprint (the fingerprint of a row of s). Parameters: none.
CREATE TABLE __unseen AS
SELECT ROW_NUMBER() OVER (ORDER BY u.sbc_fingerprint, u.sbc_copy) - 1 AS sbc_row, u.*
FROM (
  SELECT f.*, ROW_NUMBER() OVER (PARTITION BY f.sbc_fingerprint ORDER BY f.sbc_fingerprint) AS sbc_copy
  FROM (SELECT s.*, __fingerprint AS sbc_fingerprint FROM __source AS s) AS f
) AS u
LEFT JOIN (SELECT sbc_fingerprint, SUM(sbc_rows) AS sbc_rows FROM __seen GROUP BY sbc_fingerprint) AS b ON b.sbc_fingerprint = u.sbc_fingerprint
WHERE u.sbc_copy > COALESCE(b.sbc_rows, 0)
