-- eval_rgcp: one row: the cost parts of RGCP (Definition 2 of "Hierarchical anonymization
-- algorithms against background knowledge attack in data releasing") before weighting by kR
-- and normalising: untouched = sum over classes nobody joins of |E| * NCP(E); virtual = sum
-- over virtual classes g of |g| * NCP(g); the number of virtual classes; the records that
-- joined them. Removed records are the distinct rows without a home class (eval_coverage),
-- each joining the class whose summed NCP grows least (ties: smallest eq_class), and
-- $hidden further suppressed records that some class still covers, charged to the classes
-- whose covered rows outnumber their size, in eq_class order (they widen nothing). Sums
-- run over DECIMAL terms, exact whatever the order.
-- Slots: __tuples, __cov, __classes, __src (the eval_ tables), __num and __cat (lists of
-- QIs), __extend (list of aliased expressions over l and g: g's tuple with the record l
-- added), __union (list of aliased expressions over g and a: g's tuple with the records in
-- a added), __cost (weighted NCP per record, over r and src).
-- Parameters: $hidden (suppressed records that no uncovered row accounts for).
WITH lost AS (
  SELECT t.*
  FROM __tuples AS t
  JOIN __cov AS c ON c.sbc_uid = t.sbc_uid
  WHERE c.sbc_home IS NULL
), candidates AS (
  SELECT
    r.sbc_uid,
    r.eq_class,
    (r.sbc_size + 1) * (__cost) - r.sbc_size * r.sbc_cost AS sbc_increase
  FROM (
    SELECT l.sbc_uid, g.eq_class, g.sbc_size, g.sbc_cost, __extend
    FROM lost AS l
    CROSS JOIN __classes AS g
  ) AS r
  CROSS JOIN __src AS src
), nearest AS (
  SELECT
    sbc_uid,
    eq_class,
    ROW_NUMBER() OVER (PARTITION BY sbc_uid ORDER BY ROUND(sbc_increase, 9), eq_class) AS sbc_pick
  FROM candidates
), added AS (
  SELECT
    n.eq_class,
    SUM(l.sbc_m) AS sbc_added,
    MIN(l.__num) AS __num_lo,
    MAX(l.__num) AS __num_hi,
    BOOL_OR(l.__num IS NULL) AS __num_null,
    LIST(DISTINCT l.__cat) FILTER(WHERE NOT l.__cat IS NULL) AS __cat_vals,
    BOOL_OR(l.__cat IS NULL) AS __cat_null
  FROM nearest AS n
  JOIN lost AS l ON l.sbc_uid = n.sbc_uid
  WHERE n.sbc_pick = 1
  GROUP BY n.eq_class
), claimed AS (
  SELECT sbc_home AS eq_class, SUM(sbc_m) AS sbc_claimed
  FROM __cov
  WHERE NOT sbc_home IS NULL
  GROUP BY sbc_home
), surplus AS (
  SELECT
    g.eq_class,
    GREATEST(COALESCE(c.sbc_claimed, 0) - g.sbc_size, 0) AS sbc_extra
  FROM __classes AS g
  LEFT JOIN claimed AS c ON c.eq_class = g.eq_class
), hidden AS (
  SELECT
    eq_class,
    LEAST(sbc_extra, GREATEST($hidden - (SUM(sbc_extra) OVER (
      ORDER BY eq_class ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - sbc_extra), 0))
      AS sbc_hidden
  FROM surplus
)
SELECT
  COALESCE(SUM(CAST(CASE
    WHEN r.sbc_joined = 0 THEN r.sbc_size * r.sbc_cost ELSE 0
  END AS DECIMAL(38, 18))), 0) AS untouched_cost,
  COALESCE(SUM(CAST(CASE
    WHEN r.sbc_joined > 0 THEN (r.sbc_size + r.sbc_joined) * (__cost) ELSE 0
  END AS DECIMAL(38, 18))), 0) AS virtual_cost,
  COALESCE(SUM(CASE WHEN r.sbc_joined > 0 THEN 1 ELSE 0 END), 0) AS virtual_classes,
  COALESCE(SUM(r.sbc_joined), 0) AS joined
FROM (
  SELECT
    g.eq_class,
    g.sbc_size,
    g.sbc_cost,
    COALESCE(a.sbc_added, 0) + COALESCE(h.sbc_hidden, 0) AS sbc_joined,
    __union
  FROM __classes AS g
  LEFT JOIN added AS a ON a.eq_class = g.eq_class
  LEFT JOIN hidden AS h ON h.eq_class = g.eq_class
) AS r
CROSS JOIN __src AS src
