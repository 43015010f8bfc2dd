-- eval_classes: a temporary table with one row per class of the release: eq_class, its
-- generalized tuple, its size sbc_size and its weighted NCP per record sbc_cost (the sum
-- over QIs of weight * NCP of the class on that QI).
-- Slots: __target (new temporary table), __release (release table), __src (the table of
-- eval_source_stats), __qicol (list of the release's QI columns), __cost (expression over
-- r and src). Parameters: none.
CREATE TEMPORARY TABLE __target AS
SELECT
  r.eq_class,
  r.sbc_size,
  r.__qicol,
  __cost AS sbc_cost
FROM (
  SELECT eq_class, __qicol, COUNT(*) AS sbc_size
  FROM __release
  GROUP BY eq_class, __qicol
) AS r
CROSS JOIN __src AS src
