-- mode_checks: one row: the classes of a microaggregated release whose released value of
-- one QI is not their mode recomputed from the source rows joined through the labels
-- (class_mode), a missing mode (every value NULL) matching a released NULL only.
-- Slots: __classes (class table), __qi (the QI), __modes (a class_mode query of it).
-- Parameters: none.
SELECT COUNT(*) AS wrong
FROM __classes AS c
LEFT JOIN __modes AS m ON m.sbc_eq_class = c.eq_class
WHERE c.__qi IS DISTINCT FROM m.sbc_value
