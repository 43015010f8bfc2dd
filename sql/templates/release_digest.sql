-- release_digest: one text, the digest of a release as it stood at a version: each released
-- row of that version or an earlier one with its class's generalization, fingerprinted;
-- each class's fingerprints sorted and hashed together, then the classes' in class order.
-- Equal digests: the same classes with the same generalizations holding the same rows.
-- Slots: __rows (the row table, aliased r), __classes (the class table, aliased c),
-- __fingerprint (the fingerprint of a row of r with its class c). Parameters: $version.
SELECT MD5(COALESCE(STRING_AGG(d.sbc_digest, ',' ORDER BY d.eq_class), ''))
FROM (
  SELECT h.eq_class, MD5(CAST(h.eq_class AS VARCHAR) || ':' || STRING_AGG(h.sbc_hash, ',' ORDER BY h.sbc_hash)) AS sbc_digest
  FROM (
    SELECT r.eq_class, __fingerprint AS sbc_hash
    FROM __rows AS r
    JOIN __classes AS c ON c.eq_class = r.eq_class
    WHERE r.release_version <= $version
  ) AS h
  GROUP BY h.eq_class
) AS d
