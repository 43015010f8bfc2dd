-- create_release: the release table. Rows are joined to their class id, each class is
-- generalized (numeric QI to [min, max] and a has-NULL flag, categorical QI to the sorted
-- list of its distinct values, NULL made explicit as a trailing NULL element), and rows are
-- ordered by class and released columns so the source's row order does not leak.
-- Slots: __release (new table), __source (table), __labels (row_id, eq_class), __num and
-- __cat (lists of QIs), __projection and __order (lists of expressions over r, c).
-- Parameters: none.
CREATE TABLE __release AS
WITH labeled AS (
  SELECT l.eq_class AS sbc_eq_class, s.*
  FROM __source AS s
  JOIN __labels AS l ON s.rowid = l.row_id
  WHERE l.eq_class >= 0
), classes AS (
  SELECT
    sbc_eq_class,
    MIN(__num) AS __num_min,
    MAX(__num) AS __num_max,
    BOOL_OR(__num IS NULL) AS __num_has_null,
    CASE
      WHEN BOOL_OR(__cat IS NULL)
      THEN LIST_APPEND(COALESCE(LIST_SORT(LIST(DISTINCT __cat) FILTER(WHERE NOT __cat IS NULL)), []), NULL)
      ELSE LIST_SORT(LIST(DISTINCT __cat) FILTER(WHERE NOT __cat IS NULL))
    END AS __cat
  FROM labeled
  GROUP BY sbc_eq_class
)
SELECT __projection
FROM labeled AS r
JOIN classes AS c ON r.sbc_eq_class = c.sbc_eq_class
ORDER BY __order
