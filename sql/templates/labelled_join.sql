-- labelled_join: the released rows of a source and its labels, joined: each row with a
-- label of a class (>= 0), its class and the columns asked. The form labelled_rows reads
-- from a labelled source made once; this one serves a statement run alone, and the
-- distinct tuples of a run that clustered tuples joined to their own labels.
-- Slots: __source (table, aliased s), __row_id (its row id), __labels (row_id, eq_class),
-- __col (list of the source's columns). Parameters: none.
SELECT l.eq_class AS sbc_eq_class, s.__col
FROM __source AS s
JOIN __labels AS l ON __row_id = l.row_id
WHERE l.eq_class >= 0
