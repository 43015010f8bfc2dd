-- values_outside: the number of source rows whose QI value lies outside its class's range
-- or value set in the release (0 in a valid release; each class carries one tuple, which
-- class_tuples checks, so MIN picks it).
-- Slots: __source (table), __labels (row_id, eq_class), __release (table), __qicol (list of
-- the release's QI columns), __inside (one expression over s and g: all values inside).
-- Parameters: none.
SELECT COUNT(*) AS outside
FROM __source AS s
JOIN __labels AS l ON s.rowid = l.row_id
JOIN (SELECT eq_class, MIN(__qicol) AS __qicol FROM __release GROUP BY eq_class) AS g
  ON g.eq_class = l.eq_class
WHERE NOT COALESCE(__inside, FALSE)
