-- tuple_numeric_ranges: numeric_ranges read from the source's distinct QI tuples
-- (create_tuples): per numeric QI its minimum, maximum (the same as over the rows) and the
-- rows whose number is NULL (the tuples' row counts summed), each as a number.
-- Slots: __source (the tuples' table), __num (list of number expressions). Parameters: none.
SELECT
  MIN(__num) AS lo,
  MAX(__num) AS hi,
  CAST(SUM(CASE WHEN __num IS NULL THEN sbc_count ELSE 0 END) AS BIGINT) AS nulls
FROM __source
