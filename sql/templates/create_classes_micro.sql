-- create_classes_micro: the class table of a microaggregated release (--recode
-- microaggregate), one row per equivalence class: its id, its size, and each QI as one
-- value of its class, computed once by GROUP BY: a numeric QI's mean (rounded to the
-- column's type) or lower median, a categorical QI's value set where it keeps one
-- (--aggregate-categorical set). A QI released as its class's mode is NULL here, of its
-- column's type, and set by update_class_mode, one statement per such QI. NULL values are
-- left out of every aggregate; a class whose values are all NULL releases NULL.
-- Slots: __classes (new table), __labelled (a labelled_rows or labelled_join query: each
-- released row with its class sbc_eq_class and its QIs, aliased s), __size (COUNT(*)),
-- __agg and __one (zipped lists: each one-value QI's aggregate over s, and its name), __sets
-- and __cat (zipped lists: each set QI's value set over s, and its name), __projection (list
-- of expressions over g, QIs in source order).
-- Parameters: none.
CREATE TABLE __classes AS
WITH g AS (
  SELECT
    s.sbc_eq_class AS sbc_eq_class,
    __size AS sbc_size,
    __agg AS __one,
    __sets AS __cat
  FROM __labelled AS s
  GROUP BY s.sbc_eq_class
)
SELECT __projection FROM g ORDER BY sbc_eq_class
