-- eval_whole: one row: the weighted NCP per record of one class holding every input row
-- (RGCP's gF when the release has no class).
-- Slots: __original (input table), __src (eval_source_stats), __num and __cat (lists of
-- QIs), __cost (weighted NCP per record, over r and src). Parameters: none.
SELECT __cost AS sbc_cost
FROM (
  SELECT
    MIN(__num) AS __num_min,
    MAX(__num) AS __num_max,
    BOOL_OR(__num IS NULL) AS __num_has_null,
    CASE
      WHEN BOOL_OR(__cat IS NULL)
      THEN LIST_APPEND(
        COALESCE(LIST_SORT(LIST(DISTINCT __cat) FILTER(WHERE NOT __cat IS NULL)), []), NULL)
      ELSE LIST_SORT(LIST(DISTINCT __cat) FILTER(WHERE NOT __cat IS NULL))
    END AS __cat
  FROM __original
) AS r
CROSS JOIN __src AS src
