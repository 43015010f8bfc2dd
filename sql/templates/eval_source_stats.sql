-- eval_source_stats: a one-row temporary table of the input's statistics that NCP needs:
-- its row count, each numeric QI's range and each categorical QI's cardinality (NULL counts
-- as a value), under the names metrics.cost_expression reads from alias src.
-- Slots: __target (new temporary table), __original (input table), __num and __cat (lists
-- of numeric and categorical QIs). Parameters: none.
CREATE TEMPORARY TABLE __target AS
SELECT
  COUNT(*) AS sbc_rows,
  MIN(__num) AS __num_lo,
  MAX(__num) AS __num_hi,
  COUNT(DISTINCT __cat) + MAX(CASE WHEN __cat IS NULL THEN 1 ELSE 0 END) AS __cat_card
FROM __original
