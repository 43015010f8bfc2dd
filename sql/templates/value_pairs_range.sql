-- value_pairs_range: the (class, value) pairs of a numeric QI in a release: each class with
-- the source's distinct values inside its range, and with NULL when the class holds NULL.
-- Joined to the source on the value, they meet each class with the source rows that can lie
-- inside it. The values inside a range are found by number, not by a range join (see
-- range_spans): the distinct values numbered in order, each class takes the numbers between
-- its bounds, joined on the number (a key every engine hashes).
-- Slots: __release (a release, one row per released row), __original (the input table),
-- __key (the numeric QI), __spans (a range_spans query over the same). Parameters: none.
SELECT s.eq_class, v.sbc_key
FROM (
  SELECT r.eq_class, UNNEST(GENERATE_SERIES(r.sbc_lo + 1, r.sbc_hi)) AS sbc_rank
  FROM __spans AS r
  WHERE r.sbc_hi > r.sbc_lo
) AS s
JOIN (
  SELECT d.__key AS sbc_key, ROW_NUMBER() OVER (ORDER BY d.__key) AS sbc_rank
  FROM (SELECT DISTINCT __key FROM __original WHERE NOT __key IS NULL) AS d
) AS v
  ON v.sbc_rank = s.sbc_rank
UNION ALL
SELECT DISTINCT n.eq_class, NULL AS sbc_key FROM __release AS n WHERE n.__key_has_null
