-- labels_out: the class id of every row a run clustered in the engine (streamed, or in
-- Spark's workers), as the cluster command writes them to a file, read in batches.
-- Slots: __labels (table: row_id, eq_class). Parameters: none.
SELECT l.row_id AS row_id, l.eq_class AS eq_class FROM __labels AS l
