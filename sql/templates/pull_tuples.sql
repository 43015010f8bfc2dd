-- pull_tuples: the distinct QI tuples (create_tuples) streamed to the clustering step as
-- pull_rows streams rows, each with its row count, in the QIs' order: a tuple's place in
-- this order breaks the clustering's ties, the same on every run whatever order the GROUP
-- BY stored them in.
-- Slots: __tuples (table), __row_id (its row id, aliased s), __qi (list of expressions over
-- s, as pull_rows converts them), __order (list of the QIs of s). Parameters: none.
SELECT __row_id AS row_id, __qi AS q, s.sbc_count AS sbc_count
FROM __tuples AS s
ORDER BY __order
