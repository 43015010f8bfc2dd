-- create_rows: the release's row table: each released row's class id and its columns
-- released verbatim (sensitive and insensitive), written once, in class order and then by
-- those values, so the source's row order does not leak. Suppressed rows (class < 0) are
-- left out.
-- Slots: __rows (new table), __labelled (a labelled_rows or labelled_join query: each
-- released row with its class sbc_eq_class and its verbatim columns, aliased s),
-- __projection (list of expressions over s, the verbatim columns in source order), __order
-- (list of the verbatim columns of s, the sort key after the class). Parameters: none.
CREATE TABLE __rows AS
SELECT s.sbc_eq_class AS eq_class, __projection
FROM __labelled AS s
ORDER BY s.sbc_eq_class, __order
