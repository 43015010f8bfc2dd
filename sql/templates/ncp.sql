-- ncp: the summed NCP of the released rows per QI, the input's row count and the released
-- row count; per-QI NCP = (cost_i + suppressed) / n_rows (a suppressed row costs 1). A release row
-- counts __weight times: 1 for a release with a row per released row, the class size for a
-- class table (one row per class, the same sums at a tenth of the rows for k = 10).
-- Slots: __original (input table), __release (release or class table), __num and __cat
-- (lists of numeric and categorical QIs, for the input's ranges and cardinalities), __cost
-- (list of per-row cost expressions over r and src, one per QI), __weight (expression over
-- r). Parameters: none.
WITH src AS (
  SELECT
    COUNT(*) AS n_rows,
    MIN(__num) AS __num_lo,
    MAX(__num) AS __num_hi,
    COUNT(DISTINCT __cat) + MAX(CASE WHEN __cat IS NULL THEN 1 ELSE 0 END) AS __cat_card
  FROM __original
), rel AS (
  SELECT
    COALESCE(SUM(__weight), 0) AS released,
    SUM(__weight * __cost) AS cost
  FROM __release AS r
  CROSS JOIN src
)
SELECT src.n_rows, rel.*
FROM src
CROSS JOIN rel
