-- create_release_view: the release as analysts query it, one row per released row: the
-- class id, then the source's columns in order (a numeric QI as <q>_min, <q>_max and
-- <q>_has_null, a categorical QI as its class's value list, the other columns as they
-- are), each row joined to its class's generalization.
-- Slots: __release (new view), __rows (row table), __classes (class table), __projection
-- (list of expressions over r and c). Parameters: none.
CREATE VIEW __release AS
SELECT r.eq_class AS eq_class, __projection
FROM __rows AS r
JOIN __classes AS c ON r.eq_class = c.eq_class
