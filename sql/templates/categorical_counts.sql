-- categorical_counts: in one scan, the count of every value of each categorical QI and of
-- every value pair of consecutive categorical QIs (in ascending cardinality), one row per
-- group; g_i = 1 where QI i is not part of the row's grouping set. NULL is a value.
-- Slots: __source (table), __cat (list of categorical QIs), __m/__n (zipped lists: the
-- predecessor and the QI of each pair). Parameters: none.
SELECT
  GROUPING(__cat) AS g,
  __cat,
  COUNT(*) AS n_rows
FROM __source
GROUP BY GROUPING SETS ((__cat), (__m, __n))
ORDER BY GROUPING(__cat), __cat
