-- eval_classification: one row: the input's rows, the release's rows and classes, the rows
-- holding their class's majority label (summed over classes: a class's largest count of one
-- label; NULL is a label) and the sum over classes of the majority label's share (terms as
-- DECIMAL so that the sum is exact: the same release gives the same figure).
-- CM = (input rows - majority rows) / input rows: a released row off its class's majority
-- and a suppressed row each count 1.
-- Slots: __original (input table), __release (release table), __label (the target column).
-- Parameters: none.
WITH labels AS (
  SELECT eq_class, __label AS sbc_label, COUNT(*) AS sbc_count
  FROM __release
  GROUP BY eq_class, __label
), classes AS (
  SELECT eq_class, SUM(sbc_count) AS sbc_size, MAX(sbc_count) AS sbc_major
  FROM labels
  GROUP BY eq_class
)
SELECT
  (SELECT COUNT(*) FROM __original) AS sbc_rows,
  COALESCE(SUM(sbc_size), 0) AS sbc_released,
  COUNT(*) AS sbc_classes,
  COALESCE(SUM(sbc_major), 0) AS sbc_majority,
  COALESCE(SUM(CAST(CAST(sbc_major AS DOUBLE) / sbc_size AS DECIMAL(38, 18))), 0) AS sbc_purity
FROM classes
