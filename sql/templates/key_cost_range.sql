-- key_cost_range: key_cost for a numeric QI, counted from its classes' spans among the
-- source's values (range_spans) without making the pairs: the pairs, and the source rows
-- they meet (summed over the pairs); a class holding NULL pairs with NULL and meets the
-- source's NULL rows.
-- Slots: __spans (a range_spans query), __release (a release, one row per released row),
-- __original (the input table), __key (the numeric QI). Parameters: none.
SELECT s.sbc_pairs + z.sbc_classes AS pairs, s.sbc_met + z.sbc_classes * z.sbc_nulls AS met
FROM (
  SELECT
    COALESCE(SUM(CASE WHEN r.sbc_hi > r.sbc_lo THEN r.sbc_hi - r.sbc_lo ELSE 0 END), 0) AS sbc_pairs,
    COALESCE(SUM(CASE WHEN r.sbc_hi > r.sbc_lo THEN r.sbc_rows_hi - r.sbc_rows_lo ELSE 0 END), 0) AS sbc_met
  FROM __spans AS r
) AS s
CROSS JOIN (
  SELECT
    (SELECT COUNT(DISTINCT n.eq_class) FROM __release AS n WHERE n.__key_has_null) AS sbc_classes,
    (SELECT COUNT(*) FROM __original AS o WHERE o.__key IS NULL) AS sbc_nulls
) AS z
