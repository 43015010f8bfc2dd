-- report_diversity: how many distinct values of the sensitive column each class of a
-- release holds (NULL is a value): one row per number of values, with the classes
-- holding that many. Never a value itself.
-- Slots: __release (release), __sensitive (column). Parameters: none.
SELECT
  sbc_values,
  COUNT(*) AS sbc_classes
FROM (
  SELECT d.eq_class, COUNT(*) AS sbc_values
  FROM (SELECT DISTINCT r.eq_class, r.__sensitive FROM __release AS r) AS d
  GROUP BY d.eq_class
) AS sbc_c
GROUP BY sbc_values
ORDER BY sbc_values
