-- distinct_counts: one row; per column, the number of distinct non-NULL values and of
-- non-NULL values (a column distinct on every row looks like a direct identifier).
-- Slots: __source (table), __col (list of columns). Parameters: none.
SELECT
  COUNT(*) AS n_rows,
  COUNT(DISTINCT __col) AS distinct_values,
  COUNT(__col) AS non_null
FROM __source
