-- class_values: without class labels, each class's released values against the source.
-- One row:
-- * overdrawn: (class, released values) tuples that the release holds more often than the
--   source has rows with those values whose QIs all lie inside the class's generalization
--   (values moved between classes, or made up);
-- * uncovered: source rows inside no class that released their values (beyond the
--   suppressed rows, a lost row);
-- * extra: release rows whose released values the input lacks as often (over the whole
--   release).
-- The release is read as distinct (class, generalization, values) tuples and the source as
-- distinct (QIs, values) tuples, each with its count. Each released tuple is paired with
-- its class's values of one or two QIs (__pairs: the QIs whose join is estimated cheapest;
-- keyed is materialized so that the planner cannot join the source on the released values
-- alone, which meets every class with every source row sharing them), then joined to the
-- source on those values and the released values: each class meets only the source rows
-- that share its values. The generalization travels with each released tuple, so the test
-- of the other QIs is a filter on that join.
-- Slots: __release (a release, one row per released row), __original (the input table),
-- __pairs (a value_pairs query: eq_class, sbc_key and for two QIs sbc_key2), __keys (list
-- of the pairs' value columns over p), __match (condition over s and r: the source tuple
-- has the pair's values and the released values), __qi (list of the source's QI columns),
-- __qicol (list of the release's QI columns), __verb (list of the columns released
-- verbatim), __inside (condition over s and r: the QIs inside the class's generalization).
-- Parameters: none.
WITH released AS MATERIALIZED (
  SELECT eq_class, __qicol, __verb, COUNT(*) AS sbc_rows, ROW_NUMBER() OVER () AS sbc_tuple
  FROM __release
  GROUP BY eq_class, __qicol, __verb
), source AS MATERIALIZED (
  SELECT __qi, __verb, COUNT(*) AS sbc_rows, ROW_NUMBER() OVER () AS sbc_tuple
  FROM __original
  GROUP BY __qi, __verb
), keyed AS MATERIALIZED (
  SELECT r.*, __keys
  FROM released AS r
  JOIN __pairs AS p ON p.eq_class = r.eq_class
), candidates AS MATERIALIZED (
  SELECT DISTINCT r.sbc_tuple AS released_tuple, s.sbc_tuple AS source_tuple, s.sbc_rows
  FROM keyed AS r
  JOIN source AS s ON __match
  WHERE COALESCE(__inside, FALSE)
), available AS (
  SELECT released_tuple, SUM(sbc_rows) AS sbc_rows FROM candidates GROUP BY released_tuple
), extra_rows AS (
  SELECT 1 AS one, __verb FROM __release EXCEPT ALL SELECT 1 AS one, __verb FROM __original
)
SELECT
  (
    SELECT COUNT(*)
    FROM released AS r
    LEFT JOIN available AS a ON a.released_tuple = r.sbc_tuple
    WHERE r.sbc_rows > COALESCE(a.sbc_rows, 0)
  ) AS overdrawn,
  (
    SELECT COALESCE(SUM(s.sbc_rows), 0)
    FROM source AS s
    LEFT JOIN (SELECT DISTINCT source_tuple FROM candidates) AS c ON c.source_tuple = s.sbc_tuple
    WHERE c.source_tuple IS NULL
  ) AS uncovered,
  (SELECT COUNT(*) FROM extra_rows) AS extra
