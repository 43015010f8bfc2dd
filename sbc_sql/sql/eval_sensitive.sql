-- eval_sensitive: one row over the classes of the release, with p a sensitive value's share
-- in the input and q its share in a class (NULL is a value of its own): the smallest
-- number of distinct sensitive values in a class (distinct l-diversity), the largest Earth
-- Mover's Distance under equal ground distance, 0.5 * sum |p - q| over all values (the
-- values a class lacks add their p), the largest (q - p) / p over values with q > p (basic
-- beta-likeness) and the largest LEAST((q - p) / p, -LN(p)) (enhanced beta-likeness), and
-- the number of classes. Sums run over DECIMAL terms, exact whatever the order.
-- Slots: __original (input table), __release (release table), __sens (the sensitive
-- column). Parameters: none.
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
  LEFT JOIN p ON p.sbc_value IS NOT DISTINCT FROM q.sbc_value
), per_class AS (
  SELECT
    eq_class,
    COUNT(*) AS sbc_distinct,
    0.5 * (1 + SUM(CAST(ABS(sbc_q - sbc_p) - sbc_p AS DECIMAL(38, 18)))) AS sbc_emd,
    MAX(CASE WHEN sbc_q > sbc_p THEN (sbc_q - sbc_p) / NULLIF(sbc_p, 0) END) AS sbc_beta,
    MAX(CASE
      WHEN sbc_q > sbc_p
      THEN LEAST((sbc_q - sbc_p) / NULLIF(sbc_p, 0), -LN(NULLIF(sbc_p, 0)))
    END) AS sbc_enhanced
  FROM pq
  GROUP BY eq_class
)
SELECT
  MIN(sbc_distinct) AS l_diversity,
  MAX(sbc_emd) AS t_closeness,
  COALESCE(MAX(sbc_beta), 0) AS beta,
  COALESCE(MAX(sbc_enhanced), 0) AS enhanced_beta,
  COUNT(*) AS classes
FROM per_class
