-- eval_value_counts: the distinct values of one column of the input (as the expression
-- __value gives them) and how many rows hold each, in ascending order, NULL last; the
-- domain that random queries are drawn from.
-- Slots: __original (input table), __value (expression over the input's columns).
-- Parameters: none.
SELECT __value AS sbc_value, COUNT(*) AS sbc_count
FROM __original
GROUP BY __value
ORDER BY sbc_value NULLS LAST
