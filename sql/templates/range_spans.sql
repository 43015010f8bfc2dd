-- range_spans: each class's range of a numeric QI in a release, located among the source's
-- distinct values of the QI without a range join: the values and the classes' bounds are
-- sorted together once, and a bound counts the values (and their source rows) before it. A
-- range join of the classes with the values is a nested loop on PostgreSQL (no hash or merge
-- key): 100,000 classes against 30,000 dates are three billion tests.
-- Columns: eq_class, sbc_lo (the values below the class's lower bound), sbc_hi (the values up
-- to its upper bound: the class holds the values numbered sbc_lo + 1 .. sbc_hi in their
-- order, none when sbc_hi <= sbc_lo), sbc_rows_lo and sbc_rows_hi (the source rows of those
-- values, likewise), all BIGINT (as a series takes them on every engine). A class whose
-- bounds are NULL (its values all NULL) has no row.
-- Slots: __release (a release, one row per released row), __original (the input table),
-- __key (the numeric QI). Parameters: none.
WITH sbc_values AS (
  SELECT __key AS sbc_key, COUNT(*) AS sbc_rows
  FROM __original
  WHERE NOT __key IS NULL
  GROUP BY __key
), sbc_bounds AS (
  SELECT eq_class, __key_min AS sbc_lo, __key_max AS sbc_hi, ROW_NUMBER() OVER (ORDER BY eq_class) AS sbc_bound
  FROM (SELECT DISTINCT eq_class, __key_min, __key_max FROM __release) AS b
  WHERE NOT __key_min IS NULL AND NOT __key_max IS NULL
), sbc_counted AS (
  SELECT
    sbc_side,
    sbc_bound,
    CAST(SUM(sbc_value) OVER (
      ORDER BY sbc_at, sbc_side, sbc_bound ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS BIGINT) AS sbc_values_below,
    CAST(SUM(sbc_rows) OVER (
      ORDER BY sbc_at, sbc_side, sbc_bound ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS BIGINT) AS sbc_rows_below
  FROM (
    SELECT sbc_key AS sbc_at, 0 AS sbc_side, CAST(NULL AS BIGINT) AS sbc_bound, 1 AS sbc_value, sbc_rows
    FROM sbc_values
    UNION ALL
    SELECT sbc_lo AS sbc_at, -1 AS sbc_side, sbc_bound, 0 AS sbc_value, 0 AS sbc_rows FROM sbc_bounds
    UNION ALL
    SELECT sbc_hi AS sbc_at, 1 AS sbc_side, sbc_bound, 0 AS sbc_value, 0 AS sbc_rows FROM sbc_bounds
  ) AS m
)
SELECT
  b.eq_class,
  lo.sbc_values_below AS sbc_lo,
  hi.sbc_values_below AS sbc_hi,
  lo.sbc_rows_below AS sbc_rows_lo,
  hi.sbc_rows_below AS sbc_rows_hi
FROM sbc_bounds AS b
JOIN sbc_counted AS lo ON lo.sbc_bound = b.sbc_bound AND lo.sbc_side = -1
JOIN sbc_counted AS hi ON hi.sbc_bound = b.sbc_bound AND hi.sbc_side = 1
