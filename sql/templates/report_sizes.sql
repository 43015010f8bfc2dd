-- report_sizes: how the source's rows fall into groups of identical values of the columns
-- (NULL equal to NULL): one row per group size, with the number of groups of that size.
-- Slots: __source (table), __col (list of columns). Parameters: none.
SELECT
  sbc_size,
  COUNT(*) AS sbc_groups
FROM (
  SELECT COUNT(*) AS sbc_size FROM __source GROUP BY __col
) AS sbc_g
GROUP BY sbc_size
ORDER BY sbc_size
