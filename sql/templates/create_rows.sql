-- create_rows: the release's row table: each released row's class id and its columns
-- released verbatim (sensitive and insensitive), written once, in class order and then by
-- those values, so the source's row order does not leak. Suppressed rows (class < 0) are
-- left out.
-- Slots: __rows (new table), __source (table), __row_id (the engine's row id of the
-- source aliased s), __labels (row_id, eq_class), __projection
-- (list of expressions over s, the verbatim columns in source order), __order (list of
-- the verbatim columns of s, the sort key after the class). Parameters: none.
CREATE TABLE __rows AS
SELECT l.eq_class AS eq_class, __projection
FROM __source AS s
JOIN __labels AS l ON __row_id = l.row_id
WHERE l.eq_class >= 0
ORDER BY l.eq_class, __order
