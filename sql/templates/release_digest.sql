-- release_digest: one row, the digests of a release as it stood at two versions ($earlier
-- and $later; the same version twice for one): each class's generalization fingerprinted
-- once, each released row of that version or an earlier one fingerprinted on its released
-- values; a class's row fingerprints sorted and hashed with its own, then the classes' in
-- class order. Equal digests: the same classes with the same generalizations holding the
-- same rows. The rows are read once for both.
-- Slots: __rows (the row table, aliased r), __classes (the class table, aliased c),
-- __row (the fingerprint of a row of r), __class (the fingerprint of a class of c).
-- Parameters: $earlier, $later.
SELECT
  MD5(COALESCE(STRING_AGG(d.sbc_earlier, ',' ORDER BY d.eq_class), '')) AS earlier,
  MD5(COALESCE(STRING_AGG(d.sbc_later, ',' ORDER BY d.eq_class), '')) AS later
FROM (
  SELECT
    g.eq_class,
    MD5(g.sbc_class || ':' || STRING_AGG(h.sbc_hash, ',' ORDER BY h.sbc_hash) FILTER (WHERE h.release_version <= $earlier)) AS sbc_earlier,
    MD5(g.sbc_class || ':' || STRING_AGG(h.sbc_hash, ',' ORDER BY h.sbc_hash)) AS sbc_later
  FROM (
    SELECT r.eq_class, r.release_version, __row AS sbc_hash
    FROM __rows AS r
    WHERE r.release_version <= $later
  ) AS h
  JOIN (
    SELECT c.eq_class, CAST(c.eq_class AS VARCHAR) || ':' || __class AS sbc_class
    FROM __classes AS c
  ) AS g
    ON g.eq_class = h.eq_class
  GROUP BY g.eq_class, g.sbc_class
) AS d
