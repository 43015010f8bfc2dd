-- eval_keys: a temporary table of the release's classes under their join keys, one row per
-- class and combination of its keys (eval_class_keys exploded by eval_key_unnest): the
-- coverage step finds the classes that may cover an input row by an equality on these
-- columns (a join every planner hashes), then tests the ranges and sets.
-- Slots: __target (new temporary table), __exploded (a query), __w, __inc and __key (lists
-- of the width, flag and key columns). Parameters: none.
CREATE TEMPORARY TABLE __target AS
SELECT e.eq_class, e.__w, e.__inc, e.__key
FROM __exploded AS e
