-- create_release: the release table. Rows are joined to their class id and each class is
-- generalized once (numeric QI to [min, max] of its type and a has-NULL flag, categorical
-- QI to the sorted list of its distinct values, NULL kept as a trailing NULL element:
-- DuckDB's LIST keeps NULLs and sorts them last). The class's released
-- columns are gathered as one sorted list and unnested, so each row is written once, in
-- class order and then by its released values: the source's row order does not leak.
-- DuckDB path (LIST, STRUCT_PACK, UNNEST); other engines need their own twin.
-- Slots: __release (new table), __source (table), __labels (row_id, eq_class), __num and
-- __cat (lists of QIs), __row (one STRUCT of sbc_row := 1 and the sensitive/insensitive
-- columns), __projection (list of expressions over the unnested rows u). Parameters: none.
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
    LIST(DISTINCT __cat ORDER BY __cat NULLS LAST) AS __cat,
    LIST(__row ORDER BY __row) AS sbc_rows
  FROM labeled
  GROUP BY sbc_eq_class
  ORDER BY sbc_eq_class
), u AS (
  SELECT *, UNNEST(sbc_rows) AS sbc_row FROM classes
)
SELECT __projection FROM u
