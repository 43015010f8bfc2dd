-- population_matches: one row per class of a release: eq_class, sbc_size (its rows in the
-- release) and sbc_population (the population rows inside its generalization: every QI
-- within the class's range, NULL only where the class holds NULL, or among its set).
-- privacy/population.py folds these rows into the k-map check (classes with sbc_population
-- below $k_map) and the delta-presence check (sbc_size over sbc_population outside
-- [$delta_min, $delta_max]). The population's distinct tuples (n) meet the classes through
-- the classes' values of one or two QIs (__pairs: value_pairs over the release, with the
-- population as the values' table), a key every engine hashes, and the other QIs are a
-- filter on that join, as in refresh_candidates; a class no tuple meets matches 0 rows.
-- Slots: __release (a release, one row per released row, or the row table of one, aliased
-- r), __boxes (where the classes' generalizations are read: the release itself, or the class
-- table beside a row table), __population (a
-- population_tuples query), __pairs (eq_class, sbc_key and for two QIs sbc_key2), __match
-- (condition over n and p: the tuple has the pair's values), __qicol (list of the release's
-- QI columns), __inside (condition over n and c: the tuple inside the class's
-- generalization). Parameters: none.
WITH sbc_sizes AS (
  SELECT r.eq_class, COUNT(*) AS sbc_size FROM __release AS r GROUP BY r.eq_class
), sbc_boxes AS (
  SELECT DISTINCT b.eq_class, b.__qicol AS __qicol FROM __boxes AS b
), sbc_met AS (
  SELECT c.eq_class, SUM(n.sbc_rows) AS sbc_population
  FROM __population AS n
  JOIN __pairs AS p ON __match
  JOIN sbc_boxes AS c ON c.eq_class = p.eq_class
  WHERE COALESCE(__inside, FALSE)
  GROUP BY c.eq_class
)
SELECT z.eq_class, z.sbc_size, COALESCE(m.sbc_population, 0) AS sbc_population
FROM sbc_sizes AS z
LEFT JOIN sbc_met AS m ON m.eq_class = z.eq_class
