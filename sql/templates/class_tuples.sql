-- class_tuples: one row: the number of classes whose rows do not all carry the same
-- generalized QI tuple (0 in a valid release). Per-class MIN/MAX and NULL counts decide it
-- without hashing whole tuples.
-- Slots: __release (table), __same (one condition over a class's aggregates: every QI
-- column has one value). Parameters: none.
SELECT COUNT(*) AS mixed_classes
FROM (
  SELECT eq_class FROM __release GROUP BY eq_class HAVING NOT COALESCE(__same, FALSE)
) AS m
