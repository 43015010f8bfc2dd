-- row_count: one row, the number of rows of a table.
-- Slots: __source (table). Parameters: none.
SELECT COUNT(*) AS n_rows FROM __source
