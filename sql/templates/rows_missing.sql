-- rows_missing: the number of (class, released column values) rows of the labelled source
-- that the release lacks, and the number the release has beyond them (both 0 when every
-- row is released exactly once with its values). The two multisets are compared in one
-- pass: each distinct row is counted +1 per copy expected and -1 per copy released, so a
-- positive balance is that many copies missing, a negative one that many extra (what
-- EXCEPT ALL both ways gives, at half the cost).
-- Slots: __labelled (a labelled_rows or labelled_join query: each released row of the
-- source with its class sbc_eq_class and its verbatim columns), __release (table), __verb
-- (list of the sensitive and insensitive columns). Parameters: none.
WITH expected AS (
  SELECT s.sbc_eq_class AS eq_class, s.__verb, 1 AS sbc_rows
  FROM __labelled AS s
), released AS (
  SELECT r.eq_class, r.__verb, -1 AS sbc_rows FROM __release AS r
), balance AS (
  SELECT SUM(sbc_rows) AS sbc_rows
  FROM (SELECT * FROM expected UNION ALL SELECT * FROM released) AS b
  GROUP BY b.eq_class, b.__verb
)
SELECT
  COALESCE(SUM(CASE WHEN sbc_rows > 0 THEN sbc_rows ELSE 0 END), 0) AS missing,
  COALESCE(SUM(CASE WHEN sbc_rows < 0 THEN -sbc_rows ELSE 0 END), 0) AS extra
FROM balance
