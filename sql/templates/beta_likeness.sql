-- beta_likeness: one row per class of a release, with p a sensitive value's share in the
-- input and q its share in the class (NULL is a value of its own): eq_class; sbc_beta, the
-- largest (q - p) / p over the class's values with q > p (basic beta-likeness asks
-- sbc_beta <= beta); sbc_enhanced, the largest LEAST((q - p) / p, -LN(p)) over the same
-- values (the figure other tools report as a release's enhanced beta); sbc_over_cap, the
-- number of those values whose (q - p) / p exceeds -LN(p). Enhanced beta-likeness asks
-- (q - p) / p <= LEAST(beta, -LN(p)) of every value, that is sbc_beta <= beta and
-- sbc_over_cap = 0 (frequent values are held to -ln p). sbc_beta and sbc_enhanced are
-- NULL for a class with no value above its input share.
-- privacy/beta_likeness.py folds these rows into its check (classes above $beta) and its
-- measures (the largest of each figure, 0 when none).
-- Slots: __original (input table), __release (release table), __sens (the sensitive
-- column), __same (p.sbc_value equals q.sbc_value, NULL equal to NULL: a condition every
-- engine hashes, see nodes.same_key). Parameters: none.
WITH p AS (
  SELECT
    __sens AS sbc_value,
    CAST(COUNT(*) AS DOUBLE) / NULLIF((SELECT COUNT(*) FROM __original), 0) AS sbc_p
  FROM __original
  GROUP BY __sens
), q AS (
  SELECT eq_class, __sens AS sbc_value, COUNT(*) AS sbc_count
  FROM __release
  GROUP BY eq_class, __sens
), sizes AS (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __release GROUP BY eq_class
), pq AS (
  SELECT
    q.eq_class,
    CAST(q.sbc_count AS DOUBLE) / NULLIF(s.sbc_size, 0) AS sbc_q,
    COALESCE(p.sbc_p, 0) AS sbc_p
  FROM q
  JOIN sizes AS s ON s.eq_class = q.eq_class
  LEFT JOIN p ON __same
)
SELECT
  eq_class,
  MAX(CASE WHEN sbc_q > sbc_p THEN (sbc_q - sbc_p) / NULLIF(sbc_p, 0) END) AS sbc_beta,
  MAX(CASE
    WHEN sbc_q > sbc_p
    THEN LEAST((sbc_q - sbc_p) / NULLIF(sbc_p, 0), -LN(NULLIF(sbc_p, 0)))
  END) AS sbc_enhanced,
  COUNT(*) FILTER (
    WHERE sbc_q > sbc_p AND (sbc_q - sbc_p) / NULLIF(sbc_p, 0) > -LN(NULLIF(sbc_p, 0)) + 1e-12
  ) AS sbc_over_cap
FROM pq
GROUP BY eq_class
