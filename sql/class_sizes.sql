-- class_sizes: one row: number of classes and the smallest, mean and largest class size
-- of a release, and its row count.
-- Slots: __release (table). Parameters: none.
SELECT
  COUNT(*) AS classes,
  MIN(size) AS smallest,
  AVG(size) AS mean,
  MAX(size) AS largest,
  SUM(size) AS released
FROM (
  SELECT eq_class, COUNT(*) AS size FROM __release GROUP BY eq_class
) AS g
