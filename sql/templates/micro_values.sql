-- micro_values: a microaggregated release's values against its source, without the run's
-- labels (verify of a release it did not make): a class's rows could only have come from
-- the source rows whose columns released verbatim match one of its rows', so each
-- numeric QI's released value must lie within the range those rows span (a mean, a
-- median and a mode all do); each categorical QI's released mode must be a value the
-- source holds; and the release's verbatim rows must all be the source's (EXCEPT ALL).
-- A released NULL is a class whose values are all NULL, which this cannot tell from a
-- made-up NULL: it passes.
-- Slots: __release (the release view), __original (the source), __verb (list of the
-- columns released verbatim), __num and __lo and __hi (zipped lists: the numeric QIs
-- released as one value, and the names of their bounds), __inside (one condition over t
-- and p: every such value within its class's bounds, NULL passing), __mode (list of the
-- categorical QIs released as their mode), __match (the condition over r and s: a source
-- tuple's verbatim values are a released row's, NULL equal to NULL).
-- Parameters: none.
WITH spans AS MATERIALIZED (
  SELECT __verb, MIN(o.__num) AS __lo, MAX(o.__num) AS __hi
  FROM __original AS o
  GROUP BY __verb
), classes AS MATERIALIZED (
  SELECT r.eq_class AS eq_class, MIN(s.__lo) AS __lo, MAX(s.__hi) AS __hi
  FROM (SELECT DISTINCT eq_class, __verb FROM __release) AS r
  JOIN spans AS s ON __match
  GROUP BY r.eq_class
), tuples AS MATERIALIZED (
  SELECT DISTINCT eq_class, __num, __mode FROM __release
), extra_rows AS (
  SELECT 1 AS one, __verb FROM __release EXCEPT ALL SELECT 1 AS one, __verb FROM __original
)
SELECT
  (
    SELECT COUNT(*)
    FROM tuples AS t
    LEFT JOIN classes AS p ON p.eq_class = t.eq_class
    WHERE NOT COALESCE(__inside, FALSE)
  ) AS outside,
  (SELECT COUNT(*) FROM extra_rows) AS extra,
  (
    SELECT COUNT(*)
    FROM tuples AS t
    ANTI JOIN (SELECT DISTINCT o.__mode AS sbc_value FROM __original AS o) AS u ON t.__mode = u.sbc_value
    WHERE t.__mode IS NOT NULL
  ) AS __mode_unknown
