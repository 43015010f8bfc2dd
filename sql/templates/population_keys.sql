-- population_keys: the frequencies the population-risk estimators read
-- (sbc_sql/quality/population.py): the source's keys (groups of identical QI values, NULL
-- equal to NULL), each with its records f and the sum of their weights, folded into one
-- row per (f, sum of weights) with the number of keys that share both.
-- Slots: __source (table), __col (list of the QI columns), __weight (the column of the
-- records' weights). Parameters: none.
SELECT
  sbc_f,
  sbc_weight,
  COUNT(*) AS sbc_keys
FROM (
  SELECT
    COUNT(*) AS sbc_f,
    SUM(CAST(__weight AS DOUBLE)) AS sbc_weight
  FROM __source
  GROUP BY __col
) AS sbc_k
GROUP BY sbc_f, sbc_weight
ORDER BY sbc_f, sbc_weight
