-- pull_rows: the row position and every QI of each row, streamed to the clustering step:
-- numbers as DOUBLE (dates, timestamps as numbers), categoricals as stored.
-- Slots: __source (table), __row_id (the engine's row id of the source aliased s), __qi (list of expressions). Parameters: none.
SELECT __row_id AS row_id, __qi AS q FROM __source AS s
