-- same_rows: one row, the number of rows __actual lacks and the number it has beyond
-- __expected, the two compared as multisets over the columns __col (0 and 0: the same
-- rows, as often). Each distinct row is counted +1 per expected copy and -1 per actual one:
-- a positive balance is that many copies missing, a negative one that many extra.
-- Slots: __expected (the query a view must show), __actual (the view), __col (list of their
-- columns). Parameters: none.
WITH b AS (
  SELECT __col, 1 AS sbc_rows FROM __expected AS e
  UNION ALL
  SELECT __col, -1 AS sbc_rows FROM __actual AS a
), balance AS (
  SELECT SUM(sbc_rows) AS sbc_rows FROM b GROUP BY __col
)
SELECT
  COALESCE(SUM(CASE WHEN sbc_rows > 0 THEN sbc_rows ELSE 0 END), 0) AS missing,
  COALESCE(SUM(CASE WHEN sbc_rows < 0 THEN -sbc_rows ELSE 0 END), 0) AS extra
FROM balance
