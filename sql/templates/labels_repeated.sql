-- labels_repeated: how many rows of a run's labels repeat another's row id (0 for a key),
-- checked when the rows are named by a column of the source (--row-id).
-- Slots: __labels (table: row_id, eq_class). Parameters: none.
SELECT COUNT(*) - COUNT(DISTINCT l.row_id) AS repeated FROM __labels AS l
