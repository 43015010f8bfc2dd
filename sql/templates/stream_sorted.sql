-- stream_sorted: the keyed rows of a streamed run in the order its blocks are cut from: the
-- coarse order's keys, the primary first, then the row id (no two rows tie).
-- Slots: __keyed (table), __column (list of the columns read back), __key (list of the keys, the primary first). Parameters: none.
SELECT __column FROM __keyed AS r ORDER BY __key, row_id
