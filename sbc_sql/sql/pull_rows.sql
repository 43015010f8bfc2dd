-- pull_rows: the row position and every QI of each row, streamed to the clustering step:
-- numbers as DOUBLE (dates, timestamps as numbers), categoricals as stored.
-- Slots: __source (table), __qi (list of expressions). Parameters: none.
SELECT rowid AS row_id, __qi AS q FROM __source
