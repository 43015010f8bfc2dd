-- refresh_rows: a refresh's rows added to the release's row table under their classes and
-- the refresh's version, in class and value order (never the source's). The row table's
-- columns are eq_class, the columns released verbatim, release_version, in that order.
-- Slots: __rows (the row table), __added (the rows added: eq_class and the columns released
-- verbatim, aliased a), __verb (list of the columns released verbatim). Parameters:
-- $version, and those of __added.
INSERT INTO __rows
SELECT a.eq_class, a.__verb, $version
FROM __added AS a
ORDER BY a.eq_class, a.__verb
