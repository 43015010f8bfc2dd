-- eval_linkage: one row: the input's rows, the rows no class can hold (certainly
-- suppressed), and record linkage RL = the sum over the other rows of 1 / sbc_reach
-- (terms as DECIMAL so that the sum is exact: the same input gives the same figure).
-- Slots: __cov (eval_coverage). Parameters: none.
SELECT
  COALESCE(SUM(sbc_m), 0) AS sbc_rows,
  COALESCE(SUM(CASE WHEN sbc_home IS NULL THEN sbc_m ELSE 0 END), 0) AS uncovered,
  COALESCE(SUM(CAST(CASE
    WHEN sbc_home IS NULL THEN 0
    ELSE CAST(sbc_m AS DOUBLE) / NULLIF(sbc_reach, 0)
  END AS DECIMAL(38, 18))), 0) AS linkage
FROM __cov
