-- labelled_rows: the released rows of the run's labelled source (labelled): each source
-- row with a label of a class (>= 0), its class and the columns asked; what a join of the
-- source to the labels gives (labelled_join), read from the table made once.
-- Slots: __labelled (the labelled source), __col (list of its source columns).
-- Parameters: none.
SELECT l.sbc_eq_class AS sbc_eq_class, l.__col
FROM __labelled AS l
WHERE l.sbc_row_id IS NOT NULL AND l.sbc_eq_class >= 0
