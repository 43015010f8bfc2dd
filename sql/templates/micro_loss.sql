-- micro_loss: the information loss of a microaggregated release's numeric QIs, as
-- sdcMicro's dUtility measures it, one pair of figures per QI: SSE, the sum over released
-- rows of the squared difference between the row's value and its class's released value,
-- each divided by the QI's sample standard deviation over the source (standardized values);
-- and IL1s, the sum over released rows of |x - x'| / (sqrt(2) S), S that same deviation.
-- Dates count in days. A row whose value, or whose class's, is NULL adds nothing (R's
-- na.rm); a QI whose values are all equal (S = 0 or NULL) adds nothing.
-- Slots: __original (source), __labelled (a labelled_rows query: each released row with its
-- class sbc_eq_class and its QIs, aliased s), __classes (class table, aliased c), __sd and
-- __num (zipped lists: each numeric QI's sample deviation over o, and its name), __sse and
-- __sse_name, __il1 and __il1_name (zipped lists: each QI's sums over s, c and d, and
-- their names).
-- Parameters: none.
WITH d AS (
  SELECT __sd AS __num FROM __original AS o
)
SELECT __sse AS __sse_name, __il1 AS __il1_name
FROM __labelled AS s
JOIN __classes AS c ON c.eq_class = s.sbc_eq_class
CROSS JOIN d
