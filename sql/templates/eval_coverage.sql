-- eval_coverage: a temporary table, per distinct input row (sbc_uid): sbc_reach, the number
-- of release rows in the classes whose generalized tuple covers its QI values, and
-- sbc_home, the covering class that also holds a row with its verbatim values and has the
-- least weighted NCP (ties: smallest eq_class); NULL when no class can hold the row, which
-- is then certainly suppressed.
-- Slots: __target (new temporary table), __tuples (eval_tuples), __classes (eval_classes),
-- __release (release table), __verb (list of verbatim columns), __inside (expression over
-- t and g), __same (expression over t and cv). Parameters: none.
CREATE TEMPORARY TABLE __target AS
WITH cv AS (
  SELECT DISTINCT eq_class, __verb FROM __release
), pairs AS (
  SELECT
    t.sbc_uid,
    g.eq_class,
    g.sbc_size,
    g.sbc_cost,
    NOT cv.eq_class IS NULL AS sbc_own
  FROM __tuples AS t
  JOIN __classes AS g ON COALESCE(__inside, FALSE)
  LEFT JOIN cv ON cv.eq_class = g.eq_class AND __same
), reach AS (
  SELECT sbc_uid, SUM(sbc_size) AS sbc_reach FROM pairs GROUP BY sbc_uid
), homes AS (
  SELECT
    sbc_uid,
    eq_class,
    ROW_NUMBER() OVER (PARTITION BY sbc_uid ORDER BY ROUND(sbc_cost, 9), eq_class) AS sbc_pick
  FROM pairs
  WHERE sbc_own
)
SELECT
  t.sbc_uid,
  t.sbc_m,
  COALESCE(r.sbc_reach, 0) AS sbc_reach,
  h.eq_class AS sbc_home
FROM __tuples AS t
LEFT JOIN reach AS r ON r.sbc_uid = t.sbc_uid
LEFT JOIN homes AS h ON h.sbc_uid = t.sbc_uid AND h.sbc_pick = 1
