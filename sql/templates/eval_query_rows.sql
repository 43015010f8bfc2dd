-- eval_query_rows: the input's distinct QI tuples as the random queries read them (a
-- numeric QI as a number, a categorical one as text) and how many rows hold each: the
-- queries' true counts are summed from them, one pass over the tuples per batch.
-- Slots: __original (input table), __value (list of aliased expressions over the input's
-- columns), __v (list of their names). Parameters: none.
SELECT s.__v, COUNT(*) AS sbc_m
FROM (SELECT __value FROM __original) AS s
GROUP BY s.__v
