-- t_closeness: one row per class of a release, with p a sensitive value's share in the
-- input and q its share in the class (NULL is a value of its own): eq_class and sbc_emd,
-- the Earth Mover's Distance between the two distributions under equal ground distance,
-- 0.5 * sum |p - q| over all values (the values a class lacks add their p). t-closeness
-- asks sbc_emd <= t. For a categorical or boolean sensitive column; a numeric one takes
-- t_closeness_ordered. Sums run over DECIMAL terms, exact whatever the order.
-- privacy/t_closeness.py folds these rows into its check (classes above $t) and its
-- measure (the largest distance).
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
  0.5 * (1 + SUM(CAST(ABS(sbc_q - sbc_p) - sbc_p AS DECIMAL(38, 18)))) AS sbc_emd
FROM pq
GROUP BY eq_class
