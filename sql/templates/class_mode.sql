-- class_mode: each class's mode of one QI, the value most of its rows hold, ties broken by
-- the smallest value, NULL left out (a class whose values are all NULL has no row here):
-- what a microaggregated release shows for the QI (update_class_mode) and what
-- verification recomputes (class_aggregates' mode twin, mode_checks).
-- Slots: __labelled (a labelled_rows or labelled_join query: each released row with its
-- class sbc_eq_class and its QIs, aliased s), __qi (the QI).
-- Parameters: none.
SELECT m.sbc_eq_class AS sbc_eq_class, m.sbc_value AS sbc_value
FROM (
  SELECT
    n.sbc_eq_class AS sbc_eq_class,
    n.sbc_value AS sbc_value,
    ROW_NUMBER() OVER (PARTITION BY n.sbc_eq_class ORDER BY n.sbc_rows DESC, n.sbc_value) AS sbc_rank
  FROM (
    SELECT s.sbc_eq_class AS sbc_eq_class, s.__qi AS sbc_value, COUNT(*) AS sbc_rows
    FROM __labelled AS s
    WHERE s.__qi IS NOT NULL
    GROUP BY s.sbc_eq_class, s.__qi
  ) AS n
) AS m
WHERE m.sbc_rank = 1
