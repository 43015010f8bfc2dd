-- create_classes_sets: the release's class table as create_classes makes it, when each
-- class's value sets were made beside the clustering (stages.write.value_sets, from the
-- pulled value codes and the class ids) and uploaded as one row per class: the ranges,
-- has-NULL flags and sizes still come from this GROUP BY, and each categorical QI's set
-- from the uploaded row, cast to a list of the column's type. An engine's LIST aggregates
-- over many small groups cost more than the whole rest of the write (1,000,000 synthetic
-- rows, 100,000 classes, five value sets: the write 1.54 s with them, 0.84 s with the sets
-- uploaded); verification then checks every source value against these sets as it checks
-- those of create_classes.
-- Slots: __classes (new table), __labelled (a labelled_rows or labelled_join query: each
-- released row, or distinct tuple, with its class sbc_eq_class and its QIs, aliased s),
-- __size (the aggregate of a class's rows), __num (list of numeric QIs), __sets (the uploaded sets: eq_class and one
-- list per categorical QI), __projection (list of expressions over g and v, QIs in source
-- order).
-- Parameters: none.
CREATE TABLE __classes AS
WITH g AS (
  SELECT
    s.sbc_eq_class AS sbc_eq_class,
    __size AS sbc_size,
    MIN(s.__num) AS __num_min,
    MAX(s.__num) AS __num_max,
    BOOL_OR(s.__num IS NULL) AS __num_has_null
  FROM __labelled AS s
  GROUP BY s.sbc_eq_class
)
SELECT __projection FROM g JOIN __sets AS v ON v.eq_class = g.sbc_eq_class ORDER BY sbc_eq_class
