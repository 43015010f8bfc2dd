-- values_outside: the number of source rows whose QI value lies outside its class's range
-- or value set in the release (0 in a valid release).
-- Slots: __source (table), __labels (row_id, eq_class), __release (table), __qicol (list of
-- the release's QI columns), __inside (one expression over s and g: all values inside).
-- Parameters: none.
SELECT COUNT(*) AS outside
FROM __source AS s
JOIN __labels AS l ON s.rowid = l.row_id
JOIN (SELECT DISTINCT eq_class, __qicol FROM __release) AS g ON g.eq_class = l.eq_class
WHERE NOT COALESCE(__inside, FALSE)
