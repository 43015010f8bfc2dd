-- l_diversity: one row per class of a release, over the sensitive column (NULL is a value of
-- its own): eq_class; sbc_distinct, the number of distinct values in the class (distinct
-- l-diversity asks sbc_distinct >= l); sbc_entropy, the entropy -sum q ln q of the class's
-- value shares q (entropy l-diversity asks sbc_entropy >= ln l). Sums run over DECIMAL
-- terms, exact whatever the order.
-- privacy/l_diversity.py folds these rows into its check (classes below $l) and its
-- measure (the smallest figure over the classes).
-- Slots: __release (release table), __sens (the sensitive column). Parameters: none.
WITH q AS (
  SELECT eq_class, __sens AS sbc_value, COUNT(*) AS sbc_count
  FROM __release
  GROUP BY eq_class, __sens
), sizes AS (
  SELECT eq_class, COUNT(*) AS sbc_size FROM __release GROUP BY eq_class
), shares AS (
  SELECT q.eq_class, CAST(q.sbc_count AS DOUBLE) / NULLIF(s.sbc_size, 0) AS sbc_q
  FROM q
  JOIN sizes AS s ON s.eq_class = q.eq_class
)
SELECT
  eq_class,
  COUNT(*) AS sbc_distinct,
  SUM(CAST(-sbc_q * LN(sbc_q) AS DECIMAL(38, 18))) AS sbc_entropy
FROM shares
GROUP BY eq_class
