-- js_diameter: the background-knowledge bound of a release, checked on every class: each
-- row's belief (a distribution over the sensitive column's values, uploaded with the class
-- labels), and for every two distinct beliefs in one class their Jensen-Shannon divergence
-- in bits, H((a + b) / 2) - (H(a) + H(b)) / 2 with H the entropy in bits (0 log 0 = 0).
-- One row: violations, the pairs above $j (by more than rounding), and diameter, the
-- largest divergence in any class (0 when no class holds two beliefs).
-- Slots: __labels (row_id, eq_class, belief), __beliefs (belief, value, p: every value of
-- every belief, zeros included). Parameters: $j (the bound J).
WITH members AS (
  SELECT DISTINCT eq_class, belief FROM __labels WHERE eq_class >= 0 AND belief >= 0
), pairs AS (
  SELECT a.eq_class, a.belief AS sbc_a, b.belief AS sbc_b
  FROM members AS a
  JOIN members AS b ON a.eq_class = b.eq_class AND a.belief < b.belief
), entropy AS (
  SELECT belief, SUM(CASE WHEN p > 0 THEN -p * LOG2(p) ELSE 0 END) AS sbc_h
  FROM __beliefs
  GROUP BY belief
), mixed AS (
  SELECT
    pairs.sbc_a,
    pairs.sbc_b,
    SUM(
      CASE WHEN x.p + y.p > 0 THEN -((x.p + y.p) / 2) * LOG2((x.p + y.p) / 2) ELSE 0 END
    ) AS sbc_hm
  FROM (SELECT DISTINCT sbc_a, sbc_b FROM pairs) AS pairs
  JOIN __beliefs AS x ON x.belief = pairs.sbc_a
  JOIN __beliefs AS y ON y.belief = pairs.sbc_b AND y.value = x.value
  GROUP BY pairs.sbc_a, pairs.sbc_b
), divergence AS (
  SELECT mixed.sbc_hm - (ha.sbc_h + hb.sbc_h) / 2 AS sbc_js
  FROM mixed
  JOIN entropy AS ha ON ha.belief = mixed.sbc_a
  JOIN entropy AS hb ON hb.belief = mixed.sbc_b
)
SELECT
  COUNT(*) FILTER (WHERE sbc_js > $j + 1e-9) AS violations,
  COALESCE(MAX(sbc_js), 0) AS diameter
FROM divergence
