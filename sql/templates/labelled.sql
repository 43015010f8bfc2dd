-- labelled: the run's labelled source, made once: every source row beside its label (row
-- id and class), a label that names no source row and a source row without a label kept
-- too (a full join), with the source columns the run's statements read. The write and the
-- verification read it (labelled_rows, label_coverage) rather than joining the source to
-- the labels again: a join of every row for each of the class table, the row table, the
-- class checks, the label coverage and the row comparison.
-- Slots: __labelled (new temporary table), __source (table, aliased s), __row_id (its row
-- id), __labels (row_id, eq_class), __col (list of the source columns kept). Columns:
-- sbc_row_id (the source row's id, NULL for a label naming no source row), sbc_label_id
-- (the label's row_id, NULL for a source row without a label), sbc_eq_class (the label's
-- class), then __col. Parameters: none.
CREATE TEMPORARY TABLE __labelled AS
SELECT __row_id AS sbc_row_id, l.row_id AS sbc_label_id, l.eq_class AS sbc_eq_class, s.__col
FROM __source AS s
FULL JOIN __labels AS l ON __row_id = l.row_id
