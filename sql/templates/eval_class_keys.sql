-- eval_class_keys: per class of the release, for each QI, whether the coverage join keys
-- on it (sbc_inc_<i>: its range spans at most two buckets, or its set holds at most two
-- values) and the list of keys under which a row it covers is found (its buckets, its
-- values as text, the sentinel of NULL when it holds NULL; one constant when not keyed).
-- A numeric QI's bucket width sbc_w_<i> is the classes' mean range on it (1 when that is
-- 0), carried on every row so that the rows probing the keys divide by the same number.
-- Slots: __classes (eval_classes), __width (list of aliased aggregates over g: the widths),
-- __w (list of their names), __inc and __cands (lists of aliased expressions over g and w).
-- Parameters: none.
WITH w AS (
  SELECT __width FROM __classes AS g
)
SELECT g.eq_class, w.__w, __inc, __cands
FROM __classes AS g
CROSS JOIN w
