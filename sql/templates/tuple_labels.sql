-- tuple_labels: the class of every source row, from the class of its QI tuple: the labels
-- the clustering gave the distinct tuples (create_tuples), joined to the rows on the tuple
-- (NULL equal to NULL), in the engine. The result has the shape of labels uploaded row by
-- row, so every later statement reads it the same way.
-- Slots: __labels (new temporary table), __source (table, aliased s), __row_id (its row id),
-- __tuples (the tuples table, aliased t), __tuple_id (t's row id), __tuple_labels (row_id,
-- eq_class: a tuple's row id and its class), __on (the join condition of s and t).
-- Parameters: none.
CREATE TEMPORARY TABLE __labels AS
SELECT __row_id AS row_id, l.eq_class AS eq_class
FROM __source AS s
JOIN __tuples AS t ON __on
JOIN __tuple_labels AS l ON __tuple_id = l.row_id
