-- eval_queries: per target selectivity, the aggregate query error of the release: for each
-- random COUNT query (one row of __queries), the true count on the input and the estimate
-- from the release (sum over classes of size * expected share of the class's rows inside
-- the query, values spread uniformly over each range or set); then the number of queries,
-- those with a true count above 0, their mean relative error |estimate - true| / true, and
-- the mean true count as a share of the input's rows. Sums run over DECIMAL terms, exact
-- whatever the order.
-- Slots: __original (input table), __classes (eval_classes), __queries (sbc_qid, sbc_sel
-- and the query's bounds), __match (expression over s and q: the input row is counted),
-- __share (expression over g and q: the share of a class's rows the query counts).
-- Parameters: none.
WITH truth AS (
  SELECT q.sbc_qid, COUNT(*) AS sbc_true
  FROM __queries AS q
  JOIN __original AS s ON COALESCE(__match, FALSE)
  GROUP BY q.sbc_qid
), estimate AS (
  SELECT q.sbc_qid, SUM(CAST(g.sbc_size * (__share) AS DECIMAL(38, 18))) AS sbc_estimate
  FROM __queries AS q
  CROSS JOIN __classes AS g
  GROUP BY q.sbc_qid
), answers AS (
  SELECT
    q.sbc_qid,
    q.sbc_sel,
    COALESCE(t.sbc_true, 0) AS sbc_true,
    COALESCE(e.sbc_estimate, 0) AS sbc_estimate
  FROM __queries AS q
  LEFT JOIN truth AS t ON t.sbc_qid = q.sbc_qid
  LEFT JOIN estimate AS e ON e.sbc_qid = q.sbc_qid
)
SELECT
  sbc_sel AS selectivity,
  COUNT(*) AS queries,
  SUM(CASE WHEN sbc_true > 0 THEN 1 ELSE 0 END) AS used,
  AVG(CASE
    WHEN sbc_true > 0
    THEN CAST(ABS(sbc_estimate - sbc_true) / sbc_true AS DECIMAL(38, 18))
  END) AS relative_error,
  AVG(sbc_true) / NULLIF((SELECT COUNT(*) FROM __original), 0) AS true_share
FROM answers
GROUP BY sbc_sel
ORDER BY sbc_sel
