-- key_cost: one row, what joining the source to a release's classes on one QI's (class,
-- value) pairs involves: the pairs, and the source rows they meet (summed over the pairs).
-- Verification estimates from these which QI, or which two, to join on.
-- Slots: __pairs (a value_pairs_set or value_pairs_range query), __original (the input
-- table), __key (the QI), __match (p.sbc_key equals n.sbc_key, NULL equal to NULL: a
-- condition every engine hashes, see nodes.same_key). Parameters: none.
SELECT COUNT(*) AS pairs, COALESCE(SUM(n.sbc_rows), 0) AS met
FROM __pairs AS p
LEFT JOIN (SELECT __key AS sbc_key, COUNT(*) AS sbc_rows FROM __original GROUP BY __key) AS n
  ON __match
