-- create_release: the release table. Rows are joined to their class id and each class is
-- generalized once (numeric QI to [min, max] of its type and a has-NULL flag, categorical
-- QI to the sorted list of its distinct values, NULL kept as a trailing NULL element:
-- DuckDB's LIST keeps NULLs and sorts them last). Every row then takes its class's
-- generalization and is written once, in class order and then by its released values:
-- the source's row order does not leak. The class aggregate carries no row data, so the
-- one sort is over the rows (sorting classes with their rows' lists cost twice as much).
-- DuckDB path (LIST, STRUCT_PACK); other engines need their own twin.
-- Slots: __release (new table), __source (table), __labels (row_id, eq_class), __num and
-- __cat (lists of QIs), __row (one STRUCT of sbc_row := 1 and the sensitive/insensitive
-- columns of r), __projection (list of expressions over u). Parameters: none.
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
    LIST(DISTINCT __cat ORDER BY __cat NULLS LAST) AS __cat
  FROM labeled
  GROUP BY sbc_eq_class
), u AS (
  SELECT c.*, __row AS sbc_row
  FROM labeled AS r
  JOIN classes AS c ON r.sbc_eq_class = c.sbc_eq_class
)
SELECT __projection FROM u ORDER BY u.sbc_eq_class, u.sbc_row
