-- refresh_touched: every row, of any version, of the classes one version of an incremental
-- release added rows to, as a release of their own (eq_class, the QIs' generalization, the
-- columns released verbatim): the classes that version changed, for their checks (the
-- others are as their version left them, which its digest shows). A temporary table.
-- Slots: __touched (the table made), __rows (the row table, aliased r), __classes (the
-- class table, aliased c), __projection (the release's columns over r and c). Parameters:
-- $version.
CREATE TEMPORARY TABLE __touched AS
SELECT r.eq_class AS eq_class, __projection
FROM __rows AS r
JOIN __classes AS c ON r.eq_class = c.eq_class
JOIN (SELECT DISTINCT eq_class FROM __rows WHERE release_version = $version) AS v ON v.eq_class = r.eq_class
