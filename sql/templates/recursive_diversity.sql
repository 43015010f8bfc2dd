-- recursive_diversity: one row per class of a release, over the sensitive column (NULL is a
-- value of its own), its value counts ranked in descending order r1 >= r2 >= ... >= rm:
-- eq_class; sbc_values, m, the class's distinct values; sbc_top, r1; sbc_tail, the rows of
-- the values ranked l and below, r_l + ... + r_m (0 when the class holds fewer than l
-- values). Recursive (c,l)-diversity asks sbc_values >= l and sbc_top < c * sbc_tail. Values
-- of equal counts rank in any order: the sum is the same.
-- privacy/recursive_diversity.py folds these rows into its check (classes that break it
-- for $c and $l) and its measure (the largest r1 / (r_l + ... + r_m)).
-- Slots: __release (release table), __sens (the sensitive column), __rank (l, a whole
-- number). Parameters: none.
WITH q AS (
  SELECT eq_class, COUNT(*) AS sbc_count
  FROM __release
  GROUP BY eq_class, __sens
), ranked AS (
  SELECT
    eq_class,
    sbc_count,
    ROW_NUMBER() OVER (PARTITION BY eq_class ORDER BY sbc_count DESC) AS sbc_rank
  FROM q
)
SELECT
  eq_class,
  COUNT(*) AS sbc_values,
  MAX(sbc_count) AS sbc_top,
  SUM(CASE WHEN sbc_rank >= __rank THEN sbc_count ELSE 0 END) AS sbc_tail
FROM ranked
GROUP BY eq_class
