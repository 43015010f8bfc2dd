-- refresh_delta: the rows one version of an incremental release added, alone, as a release of
-- their own (eq_class, the QIs' generalization, the columns released verbatim), for their
-- checks: a temporary table.
-- Slots: __delta (the table made), __rows (the row table, aliased r), __classes (the class
-- table, aliased c), __projection (the release's columns over r and c). Parameters:
-- $version.
CREATE TEMPORARY TABLE __delta AS
SELECT r.eq_class AS eq_class, __projection
FROM __rows AS r
JOIN __classes AS c ON r.eq_class = c.eq_class
WHERE r.release_version = $version
