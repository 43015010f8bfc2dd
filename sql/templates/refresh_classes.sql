-- refresh_classes: the classes a refresh formed among its new rows, added to the release's
-- class table with their ids moved past the release's (the two tables' columns are the
-- same, in the same order).
-- Slots: __classes (the class table), __formed (the new classes, aliased f), __cols (list
-- of the class table's columns after eq_class). Parameters: $offset.
INSERT INTO __classes
SELECT f.eq_class + $offset, f.__cols
FROM __formed AS f
ORDER BY f.eq_class
