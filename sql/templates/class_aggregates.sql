-- class_aggregates: one row, a count per QI released as its class's mean or median: the
-- classes whose released value differs from the aggregate recomputed from the source rows
-- joined through the labels (the same expression the class table was made with; a class
-- missing from either side counts as differing).
-- Slots: __classes (class table), __labelled (a labelled_rows query: each released row
-- with its class sbc_eq_class and its QIs, aliased s), __agg and __one (zipped lists: each
-- such QI's aggregate over s, and its name), __differs and __wrong (zipped lists: a
-- condition over c, the class table, and g, the recomputation: the two differ; and a name
-- for its count).
-- Parameters: none.
WITH g AS (
  SELECT s.sbc_eq_class AS sbc_eq_class, __agg AS __one
  FROM __labelled AS s
  GROUP BY s.sbc_eq_class
)
SELECT SUM(CASE WHEN __differs THEN 1 ELSE 0 END) AS __wrong
FROM __classes AS c
FULL JOIN g ON g.sbc_eq_class = c.eq_class
