-- class_table_checks: one row of facts on a release's class table against its row table:
-- the classes, the distinct class ids (fewer means an id with two rows), and the classes
-- whose stored class_size is not their row count in the row table, or that exist in one
-- table only. A valid release has classes = distinct_classes and unmatched 0.
-- Slots: __classes (class table), __rows (row table). Parameters: none.
WITH sizes AS MATERIALIZED (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __rows GROUP BY eq_class
)
SELECT
  (SELECT COUNT(*) FROM __classes) AS classes,
  (SELECT COUNT(DISTINCT eq_class) FROM __classes) AS distinct_classes,
  (
    SELECT COUNT(*)
    FROM __classes AS c
    FULL JOIN sizes AS z ON c.eq_class = z.eq_class
    WHERE c.class_size IS DISTINCT FROM z.sbc_size
  ) AS unmatched
