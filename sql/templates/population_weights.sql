-- population_weights: whether a column can weigh the records (the people each stands
-- for): its rows, its NULLs and its values below the smallest weight allowed.
-- Slots: __source (table), __weight (the column). Parameters: $least (the smallest weight
-- allowed).
SELECT
  COUNT(*) AS sbc_rows,
  COUNT(*) - COUNT(__weight) AS sbc_nulls,
  SUM(CASE WHEN CAST(__weight AS DOUBLE) < $least THEN 1 ELSE 0 END) AS sbc_below
FROM __source
