-- eval_key_unnest: one row per element of a list of keys of each row of __level (a
-- subquery of eval_class_keys, or of this template), NULL elements dropped: the classes'
-- keys are exploded one QI at a time, so a class gives the product of its few keys.
-- Slots: __level (a query), __list (the list column, over l), __key (the new column's name).
-- Parameters: none.
SELECT *
FROM (
  SELECT l.*, UNNEST(__list) AS __key FROM __level AS l
) AS u
WHERE NOT __key IS NULL
