-- profile_sets: one row per grouping set of the source's columns, all in one scan: its
-- flags (flag_i = 1 where column i is not in the set), the number of equivalence classes
-- (groups of identical tuples; NULL is a value), the rows alone in theirs, the smallest
-- class, the rows in classes of fewer than 5, 10 and 20 rows (a prosecutor risk 1/size
-- above 20 %, 10 % and 5 %), the highest prosecutor risk 1/smallest and the mean one over
-- the rows, classes/rows (the marketer risk).
-- Slots: __source (table), __col (list of the columns the sets are made of) zipped with
-- __flag (list of names for their flags), __sets (a GROUPING SETS expression over them),
-- __size (a name for the class size; the names differ from every column's).
-- Parameters: none.
SELECT
  __flag,
  COUNT(*) AS classes,
  SUM(__size) AS records,
  SUM(CASE WHEN __size = 1 THEN 1 ELSE 0 END) AS unique_records,
  MIN(__size) AS smallest,
  SUM(CASE WHEN __size < 5 THEN __size ELSE 0 END) AS above_20,
  SUM(CASE WHEN __size < 10 THEN __size ELSE 0 END) AS above_10,
  SUM(CASE WHEN __size < 20 THEN __size ELSE 0 END) AS above_5,
  CAST(1 AS DOUBLE) / MIN(__size) AS highest_risk,
  CAST(COUNT(*) AS DOUBLE) / SUM(__size) AS mean_risk
FROM (
  SELECT
    GROUPING(__col) AS __flag,
    COUNT(*) AS __size
  FROM __source
  GROUP BY __sets
) AS sbc_classes
GROUP BY __flag
