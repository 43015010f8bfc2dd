-- tuple_categorical_counts: categorical_counts read from the source's distinct QI tuples
-- (create_tuples): the rows holding every value of each categorical QI and every value
-- pair of consecutive categorical QIs (the tuples' row counts summed), one row per group;
-- g_i = 1 where QI i is not part of the row's grouping set. NULL is a value.
-- Slots: __source (the tuples' table), __cat (list of categorical QIs), __m/__n (zipped
-- lists: the predecessor and the QI of each pair). Parameters: none.
SELECT
  GROUPING(__cat) AS g,
  __cat,
  CAST(SUM(sbc_count) AS BIGINT) AS n_rows
FROM __source
GROUP BY GROUPING SETS ((__cat), (__m, __n))
ORDER BY GROUPING(__cat), __cat
