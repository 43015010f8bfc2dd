-- value_pairs_set: the (class, value) pairs of a categorical QI in a release: each class's
-- value set unnested, NULL among the values when the set holds NULL. Joined to the source
-- on the value, they meet each class with the source rows that can lie inside it, instead
-- of every class with every row.
-- Slots: __release (a release, one row per released row), __key (the categorical QI).
-- Parameters: none.
SELECT b.eq_class, UNNEST(b.__key) AS sbc_key
FROM (SELECT DISTINCT eq_class, __key FROM __release) AS b
