-- population_matches: one row per class of a release: eq_class, sbc_size (its rows in the
-- release) and sbc_population (the population rows inside its generalization: every QI
-- within the class's range, NULL only where the class holds NULL, or among its set).
-- privacy/population.py folds these rows into the k-map check (classes with sbc_population
-- below $k_map) and the delta-presence check (sbc_size over sbc_population outside
-- [$delta_min, $delta_max]). The population's distinct tuples (n) meet the classes through
-- the classes' values of one or two QIs (__pairs: value_pairs over the release, with the
-- population as the values' table), a key every engine hashes, and the other QIs are a
-- filter on that join, as in class_values; a class no tuple meets matches 0 rows. The
-- classes are keyed with their pairs first, materialized: a planner that joined the
-- population to one QI's pairs before the other's (PostgreSQL, from its estimate of a
-- series) would meet each tuple with every class of its age, 485 million rows where the
-- two keys meet 8 million. The sizes and the matches meet in one aggregate, not a join
-- whose sides a planner cannot estimate (a nested loop over 10,000 classes on PostgreSQL).
-- Slots: __release (a release, one row per released row, or the row table of one, aliased
-- r), __boxes (where the classes' generalizations are read: the release itself, or the class
-- table beside a row table), __population (a
-- population_tuples query), __pairs (eq_class, sbc_key and for two QIs sbc_key2), __match
-- (condition over n and c: the tuple has the keyed class's pair values), __keys (the
-- pairs' key columns over p), __qicol (list of the release's QI columns), __inside
-- (condition over n and c: the tuple inside the class's generalization). Parameters: none.
WITH sbc_sizes AS (
  SELECT r.eq_class, COUNT(*) AS sbc_size FROM __release AS r GROUP BY r.eq_class
), sbc_boxes AS MATERIALIZED (
  SELECT DISTINCT b.eq_class, b.__qicol AS __qicol FROM __boxes AS b
), sbc_keyed AS MATERIALIZED (
  SELECT c.*, __keys
  FROM sbc_boxes AS c
  JOIN __pairs AS p ON p.eq_class = c.eq_class
), sbc_people AS MATERIALIZED (
  SELECT * FROM __population AS t
), sbc_met AS (
  SELECT c.eq_class, SUM(n.sbc_rows) AS sbc_population
  FROM sbc_keyed AS c
  JOIN sbc_people AS n ON __match
  WHERE COALESCE(__inside, FALSE)
  GROUP BY c.eq_class
)
SELECT u.eq_class, SUM(u.sbc_size) AS sbc_size, SUM(u.sbc_population) AS sbc_population
FROM (
  SELECT z.eq_class, z.sbc_size, 0 AS sbc_population FROM sbc_sizes AS z
  UNION ALL
  SELECT m.eq_class, 0 AS sbc_size, m.sbc_population FROM sbc_met AS m
) AS u
GROUP BY u.eq_class
