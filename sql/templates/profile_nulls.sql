-- profile_nulls: one row: the table's rows, then per column its non-NULL values (its NULLs
-- are the difference).
-- Slots: __source (table), __col (list of columns). Parameters: none.
SELECT
  COUNT(*) AS n_rows,
  COUNT(__col) AS non_null
FROM __source
