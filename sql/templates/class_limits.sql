-- class_limits: the per-column limits over a release's classes (--max-width, --max-values):
-- per limited QI, the classes whose range is wider than its limit (numeric: max - min, a
-- date in days, a timestamp in microseconds) or whose value set holds more values
-- (categorical, NULL counted as a value), then the widest range or largest set found.
-- Slots: __release (a class table, or a release: eq_class and the generalized columns),
-- __figure (list: each limited QI's per-class figure, an aggregate over the class's rows),
-- __broken (list: per figure, the classes over its limit), __worst (list: per figure, its
-- largest value). Parameters: $limit_0, $limit_1, ... (each QI's limit, in the figure's units).
WITH sbc_classes AS MATERIALIZED (
  SELECT eq_class, __figure AS sbc_figure FROM __release GROUP BY eq_class
)
SELECT __broken AS sbc_broken, __worst AS sbc_worst FROM sbc_classes
