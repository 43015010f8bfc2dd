-- pull_sample: every few rows of the pull by row id, the sample a streamed run plans the
-- spread order of its blocks from (the engine filters: only the sample leaves it).
-- Slots: __rows (query: the pull's rows, row_id first). Parameters: $every (a row in how many).
SELECT * FROM __rows AS p WHERE p.row_id % $every = 0
