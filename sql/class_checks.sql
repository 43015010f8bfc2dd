-- class_checks: one row from one pass over the release and one join with the labelled
-- source: classes, smallest class, released rows, classes carrying more than one
-- generalized tuple, and source rows whose QI value lies outside their class's range or
-- set. A valid release has mixed_classes = 0 and outside = 0 (MIN picks a class's tuple
-- once it is known to be its only one).
-- Slots: __release (table), __source (table), __labels (row_id, eq_class), __qicol (list
-- of the release's QI columns), __same (one condition over a class's aggregates: every QI
-- column has one value), __inside (one expression over s and g: all values inside).
-- Parameters: none.
WITH g AS MATERIALIZED (
  SELECT
    eq_class,
    COUNT(*) AS sbc_size,
    COALESCE(__same, FALSE) AS sbc_one_tuple,
    MIN(__qicol) AS __qicol
  FROM __release
  GROUP BY eq_class
)
SELECT
  (SELECT COUNT(*) FROM g) AS classes,
  (SELECT MIN(sbc_size) FROM g) AS smallest,
  (SELECT SUM(sbc_size) FROM g) AS released,
  (SELECT COUNT(*) FROM g WHERE NOT sbc_one_tuple) AS mixed_classes,
  (
    SELECT COUNT(*)
    FROM __source AS s
    JOIN __labels AS l ON s.rowid = l.row_id
    JOIN g ON g.eq_class = l.eq_class
    WHERE NOT COALESCE(__inside, FALSE)
  ) AS outside
