-- class_sizes: one row: number of classes and the smallest, mean and largest class size
-- of a release, and its row count. A release row counts __weight times (1, or the class
-- size of a class table).
-- Slots: __release (release or class table), __weight (expression over r). Parameters: none.
SELECT
  COUNT(*) AS classes,
  MIN(size) AS smallest,
  AVG(size) AS mean,
  MAX(size) AS largest,
  SUM(size) AS released
FROM (
  SELECT r.eq_class, SUM(__weight) AS size FROM __release AS r GROUP BY r.eq_class
) AS g
