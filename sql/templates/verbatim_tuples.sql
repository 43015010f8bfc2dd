-- verbatim_tuples: one row, the number of distinct tuples of the columns a release keeps
-- verbatim (sensitive and insensitive) in the input: how far equal released values narrow
-- a join of the source to the classes.
-- Slots: __original (the input table), __verb (list of the columns). Parameters: none.
SELECT COUNT(*) AS tuples FROM (SELECT DISTINCT 1 AS one, __verb FROM __original) AS d
