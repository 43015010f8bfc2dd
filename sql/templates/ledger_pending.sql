-- ledger_pending: the source's rows a release made incremental has not released, added to
-- its pending table: per fingerprint, the source's rows beyond those its ledger of released
-- rows counts.
-- Slots: __pending (the pending table), __source (the input, aliased s), __seen (the ledger
-- of released rows), __fingerprint (the fingerprint of a row of s). Parameters: $reason
-- (why they wait, in words).
INSERT INTO __pending
SELECT a.sbc_fingerprint, a.sbc_rows - COALESCE(b.sbc_rows, 0), $reason
FROM (SELECT __fingerprint AS sbc_fingerprint, COUNT(*) AS sbc_rows FROM __source AS s GROUP BY 1) AS a
LEFT JOIN (SELECT sbc_fingerprint, SUM(sbc_rows) AS sbc_rows FROM __seen GROUP BY sbc_fingerprint) AS b ON b.sbc_fingerprint = a.sbc_fingerprint
WHERE a.sbc_rows > COALESCE(b.sbc_rows, 0)
