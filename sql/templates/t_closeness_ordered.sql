-- t_closeness_ordered: one row per class of a release: eq_class and sbc_emd, the Earth
-- Mover's Distance between the class's and the input's distribution of a numeric sensitive
-- column under ordered distance: the input's distinct values v_1 < ... < v_m (NULL last, as
-- a value of its own), r_i = q_i - p_i, and EMD = sum over i of |r_1 + ... + r_i| / (m - 1);
-- NULL when m = 1 (a release's figure is then 0). t-closeness asks sbc_emd <= t. Sums run
-- over DECIMAL terms, exact whatever the order.
-- privacy/t_closeness.py folds these rows as those of t_closeness.
-- Slots: __original (input table), __release (release table), __sens (the sensitive
-- column), __same (q.sbc_value equals r.sbc_value, NULL equal to NULL: a condition every
-- engine hashes, see nodes.same_key). Parameters: none.
WITH vals AS (
  SELECT __sens AS sbc_value, COUNT(*) AS sbc_count FROM __original GROUP BY __sens
), ranked AS (
  SELECT
    sbc_value,
    ROW_NUMBER() OVER (ORDER BY sbc_value NULLS LAST) AS sbc_rank,
    CAST(sbc_count AS DOUBLE) / NULLIF(SUM(sbc_count) OVER (), 0) AS sbc_p
  FROM vals
), sizes AS (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __release GROUP BY eq_class
), q AS (
  SELECT eq_class, __sens AS sbc_value, COUNT(*) AS sbc_count
  FROM __release
  GROUP BY eq_class, __sens
), grid AS (
  SELECT
    s.eq_class,
    r.sbc_rank,
    r.sbc_p,
    COALESCE(CAST(q.sbc_count AS DOUBLE) / NULLIF(s.sbc_size, 0), 0) AS sbc_q
  FROM sizes AS s
  CROSS JOIN ranked AS r
  LEFT JOIN q ON q.eq_class = s.eq_class AND __same
), running AS (
  SELECT
    eq_class,
    -- sbc_rank is never NULL; NULLS FIRST is what BigQuery's ascending order does by itself,
    -- which takes no NULLS LAST in an aggregate's window
    SUM(CAST(sbc_q - sbc_p AS DECIMAL(38, 18))) OVER (
      PARTITION BY eq_class ORDER BY sbc_rank NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS sbc_run
  FROM grid
), per_class AS (
  SELECT eq_class, SUM(ABS(sbc_run)) AS sbc_moved FROM running GROUP BY eq_class
)
SELECT eq_class, sbc_moved / NULLIF((SELECT COUNT(*) FROM ranked) - 1, 0) AS sbc_emd
FROM per_class
