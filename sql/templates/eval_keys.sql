-- eval_keys: a temporary table of the release's classes under their join keys, one row per
-- class and combination of its keys (eval_class_keys exploded by eval_key_unnest): the
-- coverage step finds the classes that may cover an input row by an equality on these
-- columns (a join every planner hashes), then tests the ranges and sets.
-- Slots: __target (new temporary table), __exploded (a query), __sig and __key (lists of
-- the width or flag columns and of the key columns). Parameters: none.
CREATE TEMPORARY TABLE __target AS
SELECT e.eq_class, e.__sig, e.__key
FROM __exploded AS e
