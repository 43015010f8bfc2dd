-- numeric_ranges: one row; per numeric QI its minimum, maximum and NULL count, each as a
-- number (dates in days, timestamps in microseconds since 1970-01-01).
-- Slots: __source (table), __num (list of number expressions). Parameters: none.
SELECT
  MIN(__num) AS lo,
  MAX(__num) AS hi,
  COUNT(*) - COUNT(__num) AS nulls
FROM __source
