-- eval_class_stats: one row: the sum of squared class sizes (for the discernibility
-- metric) and the number of distinct generalized QI tuples of the release.
-- Slots: __release (release table), __qicol (list of the release's QI columns).
-- Parameters: none.
WITH sizes AS (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __release GROUP BY eq_class
), generalized AS (
  SELECT DISTINCT __qicol FROM __release
)
SELECT
  (SELECT COALESCE(SUM(sbc_size * sbc_size), 0) FROM sizes) AS squares,
  (SELECT COUNT(*) FROM generalized) AS tuples
