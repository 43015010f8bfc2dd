-- eval_coverage: a temporary table, per distinct input row (sbc_uid): sbc_reach, the number
-- of release rows in the classes whose generalized tuple covers its QI values, and
-- sbc_home, the covering class that also holds a row with its verbatim values and has the
-- least weighted NCP (ties: smallest eq_class); NULL when no class can hold the row, which
-- is then certainly suppressed. The classes a row may lie in are found by an equality on
-- the keys of eval_keys (each row probed once per combination of keyed QIs those use),
-- then tested on their ranges and sets: the cost grows with the rows and the classes near
-- each, not with rows x classes. The probes are MATERIALIZED so that their keys are columns
-- every planner hashes: inlined, PostgreSQL joined the keys to the signatures first and
-- tested each row's key expressions against them pair by pair (100,000 rows: minutes).
-- Slots: __target (new temporary table), __tuples (eval_tuples), __classes (eval_classes),
-- __keys (eval_keys), __release (release table), __verb (list of verbatim columns), __sig
-- (list of eval_keys' width or flag columns), __probe (list of aliased expressions over t
-- and s: a row's keys), __match (expression over p and k: equal flags and keys), __inside
-- (expression over t and g), __same (expression over t and cv). Parameters: none.
CREATE TEMPORARY TABLE __target AS
WITH cv AS (
  SELECT DISTINCT eq_class, __verb FROM __release
), signatures AS (
  SELECT DISTINCT __sig FROM __keys
), probes AS MATERIALIZED (
  SELECT t.sbc_uid, s.__sig, __probe
  FROM __tuples AS t
  CROSS JOIN signatures AS s
), candidates AS (
  SELECT DISTINCT p.sbc_uid, k.eq_class
  FROM probes AS p
  JOIN __keys AS k ON __match
), pairs AS (
  SELECT
    t.sbc_uid,
    g.eq_class,
    g.sbc_size,
    g.sbc_cost,
    NOT cv.eq_class IS NULL AS sbc_own
  FROM candidates AS c
  JOIN __tuples AS t ON t.sbc_uid = c.sbc_uid
  JOIN __classes AS g ON g.eq_class = c.eq_class AND COALESCE(__inside, FALSE)
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
