-- tuple_sizes: one row: the number of distinct generalized QI tuples of a release and the
-- smallest number of rows sharing one (k-anonymity holds when it is >= k), and the number
-- of classes that carry more than one generalized tuple (0 in a valid release).
-- Slots: __release (table), __qicol (list of the release's QI columns). Parameters: none.
WITH tuples AS (
  SELECT __qicol, COUNT(*) AS size FROM __release GROUP BY __qicol
), mixed AS (
  SELECT eq_class
  FROM (SELECT DISTINCT eq_class, __qicol FROM __release) AS d
  GROUP BY eq_class
  HAVING COUNT(*) > 1
)
SELECT
  (SELECT COUNT(*) FROM tuples) AS tuples,
  (SELECT MIN(size) FROM tuples) AS smallest,
  (SELECT COUNT(*) FROM mixed) AS mixed_classes
