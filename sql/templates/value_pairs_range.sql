-- value_pairs_range: the (class, value) pairs of a numeric QI in a release: each class with
-- the source's distinct values inside its range (a range join over the distinct values,
-- not the rows), and with NULL when the class holds NULL. Joined to the source on the
-- value, they meet each class with the source rows that can lie inside it.
-- Slots: __release (a release, one row per released row), __original (the input table),
-- __key (the numeric QI). Parameters: none.
SELECT b.eq_class, d.sbc_key
FROM (SELECT DISTINCT eq_class, __key_min, __key_max FROM __release) AS b
JOIN (SELECT DISTINCT __key AS sbc_key FROM __original) AS d
  ON d.sbc_key >= b.__key_min AND d.sbc_key <= b.__key_max
UNION ALL
SELECT DISTINCT n.eq_class, NULL AS sbc_key FROM __release AS n WHERE n.__key_has_null
