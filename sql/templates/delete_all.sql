-- delete_all: every row of a working table removed (an incremental release's pending rows,
-- written again by each refresh).
-- Slots: __table. Parameters: none.
DELETE FROM __table
