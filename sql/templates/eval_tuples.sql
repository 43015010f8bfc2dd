-- eval_tuples: a temporary table of the input's distinct rows (QI and verbatim columns),
-- each with an id sbc_uid and its multiplicity sbc_m; later steps work per distinct row.
-- Slots: __target (new temporary table), __original (input table), __col (list of the QI
-- and verbatim columns), __uid (a ROW_NUMBER() expression ordered by all of them).
-- Parameters: none.
CREATE TEMPORARY TABLE __target AS
SELECT
  __uid AS sbc_uid,
  __col,
  COUNT(*) AS sbc_m
FROM __original
GROUP BY __col
