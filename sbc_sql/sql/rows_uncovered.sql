-- rows_uncovered: without class labels, the number of input rows that no generalized
-- tuple of the release covers with equal released columns, and the number of release rows
-- whose released columns do not occur in the input as often.
-- Slots: __original (input table), __release (release table), __qicol (list of the
-- release's QI columns), __verb (list of sensitive and insensitive columns), __inside (one
-- expression over sbc_s and g). Parameters: none. The input's alias is sbc_s, not s: inside
-- the subquery a released column named s (a STRUCT or MAP) would capture s."age".
WITH g AS (
  SELECT DISTINCT __qicol, __verb FROM __release
), extra_rows AS (
  SELECT 1 AS one, __verb FROM __release EXCEPT ALL SELECT 1 AS one, __verb FROM __original
)
SELECT
  (
    SELECT COUNT(*) FROM __original AS sbc_s
    WHERE NOT EXISTS (SELECT 1 FROM g WHERE COALESCE(__inside, FALSE))
  ) AS uncovered,
  (SELECT COUNT(*) FROM extra_rows) AS extra
