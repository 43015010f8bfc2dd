-- ledger_gone: how many rows an incremental release has released that its source no longer
-- holds (deleted, or changed on a column the release holds): per fingerprint, the ledger's
-- count beyond the source's.
-- Slots: __source (the input, aliased s), __seen (the ledger of released rows),
-- __fingerprint (the fingerprint of a row of s). Parameters: none.
SELECT COALESCE(SUM(b.sbc_rows - COALESCE(a.sbc_rows, 0)), 0) AS gone
FROM (SELECT sbc_fingerprint, SUM(sbc_rows) AS sbc_rows FROM __seen GROUP BY sbc_fingerprint) AS b
LEFT JOIN (SELECT __fingerprint AS sbc_fingerprint, COUNT(*) AS sbc_rows FROM __source AS s GROUP BY 1) AS a
  ON a.sbc_fingerprint = b.sbc_fingerprint
WHERE b.sbc_rows > COALESCE(a.sbc_rows, 0)
