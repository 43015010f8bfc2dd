-- refresh_formed_rows: the rows of the classes a refresh formed among its new rows, their
-- class ids moved past the release's.
-- Slots: __formed (the new classes' row table, aliased f), __verb (list of the columns
-- released verbatim). Parameters: $offset.
SELECT f.eq_class + $offset AS eq_class, f.__verb
FROM __formed AS f
