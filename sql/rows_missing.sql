-- rows_missing: the number of (class, released column values) rows of the labelled source
-- that the release lacks, and the number the release has beyond them (both 0 when every
-- row is released exactly once with its values).
-- Slots: __source (table), __labels (row_id, eq_class), __release (table), __verb (list of
-- the sensitive and insensitive columns). Parameters: none.
WITH expected AS (
  SELECT l.eq_class, s.__verb FROM __source AS s JOIN __labels AS l ON s.rowid = l.row_id
  WHERE l.eq_class >= 0
), released AS (
  SELECT r.eq_class, r.__verb FROM __release AS r
)
SELECT
  (SELECT COUNT(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM released) AS a) AS missing,
  (SELECT COUNT(*) FROM (SELECT * FROM released EXCEPT ALL SELECT * FROM expected) AS b) AS extra
