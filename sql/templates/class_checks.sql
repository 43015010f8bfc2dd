-- class_checks: one row of facts on a release just written as a class table and a row
-- table: classes, distinct class ids (fewer means an id carries two tuples), the smallest
-- class and the released rows (both counted from the row table), classes whose stored
-- size is not their row count or that exist in only one table, source rows whose numeric
-- QI value lies outside their class's range (or whose class is missing), and, one count
-- per categorical QI, source rows whose value is not in their class's value set.
-- The set test is an anti-join of each row's (class, value) against the class table's
-- lists unnested into (class, value) pairs: at 10,000,000 rows half the time of testing
-- list_contains on every row (6 s against 11 s for five QIs).
-- The labelled QIs are read once (MATERIALIZED) and every value check reads them
-- (1,000,000 synthetic rows: 0.38 s against 0.65 s for a join per check); a run reads them
-- from its labelled source, made once (labelled, labelled_rows).
-- A valid release has classes = distinct_classes and every other count 0.
-- A run that clustered distinct QI tuples checks its tuples against the classes (each
-- source row holds its tuple's values: the row labels are a join on the tuple, and
-- label_coverage checks that each row has one), so the values are read once per tuple.
-- Slots: __classes (class table), __rows (row table), __labelled (a labelled_rows or
-- labelled_join query: each released row, or distinct tuple, with its class sbc_eq_class
-- and its QIs), __qi (list of the QIs), __inside (one expression over s and g: numeric values inside), __cat (list of
-- categorical QIs), __same (list, one per categorical QI: s's value equals u.sbc_value, NULL
-- equal to NULL, a condition every engine hashes, see nodes.same_key).
-- Parameters: none.
WITH sizes AS MATERIALIZED (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __rows GROUP BY eq_class
),
labelled AS MATERIALIZED (
  SELECT s.sbc_eq_class AS sbc_eq_class, s.__qi
  FROM __labelled AS s
)
SELECT
  (SELECT COUNT(*) FROM __classes) AS classes,
  (SELECT COUNT(DISTINCT eq_class) FROM __classes) AS distinct_classes,
  (SELECT MIN(sbc_size) FROM sizes) AS smallest,
  (SELECT SUM(sbc_size) FROM sizes) AS released,
  (
    SELECT COUNT(*)
    FROM __classes AS c
    FULL JOIN sizes AS z ON c.eq_class = z.eq_class
    WHERE c.class_size IS DISTINCT FROM z.sbc_size
  ) AS unmatched,
  (
    SELECT COUNT(*)
    FROM labelled AS s
    LEFT JOIN __classes AS g ON g.eq_class = s.sbc_eq_class
    WHERE NOT COALESCE(__inside, FALSE)
  ) AS outside,
  (
    SELECT COUNT(*)
    FROM labelled AS s
    ANTI JOIN (SELECT eq_class, UNNEST(__cat) AS sbc_value FROM __classes) AS u
      ON s.sbc_eq_class = u.eq_class AND __same
  ) AS __cat_outside
