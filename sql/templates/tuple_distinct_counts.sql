-- tuple_distinct_counts: distinct_counts read from the source's distinct QI tuples
-- (create_tuples) instead of its rows: per QI, the distinct non-NULL values (the same over
-- the tuples as over the rows) and the rows holding a non-NULL value (the tuples' row
-- counts summed), in one pass over the tuples.
-- Slots: __source (the tuples' table), __col (list of QIs). Parameters: none.
SELECT
  CAST(SUM(sbc_count) AS BIGINT) AS n_rows,
  (SELECT COUNT(*) FROM (SELECT DISTINCT __col FROM __source WHERE __col IS NOT NULL)) AS distinct_values,
  CAST(SUM(CASE WHEN __col IS NULL THEN 0 ELSE sbc_count END) AS BIGINT) AS non_null
FROM __source
