-- eval_class_keys: per class of the release, for each QI, what its coverage join keys are
-- made under (sbc_wl_<i>: a numeric QI's bucket width, 0 when not keyed; sbc_inc_<i>:
-- whether a categorical QI is keyed, when the set holds at most two values) and the list of
-- keys under which a row it covers is found (its buckets, its values as text, the sentinel
-- of NULL when it holds NULL; one constant when not keyed). The base width sbc_w_<i> of a
-- numeric QI is the classes' mean range on it (1 when that is 0).
-- Slots: __classes (eval_classes), __width (list of aliased aggregates over g: the base
-- widths), __inc (list of aliased expressions over g and w), __cands (list of aliased
-- expressions over l, a class with its __inc columns). Parameters: none.
WITH w AS (
  SELECT __width FROM __classes AS g
), l AS (
  SELECT g.*, __inc
  FROM __classes AS g
  CROSS JOIN w
)
SELECT l.*, __cands
FROM l
