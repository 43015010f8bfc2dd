-- refresh_candidates: the classes of a release each new row lies inside: the (row, class)
-- pairs where every QI of the row is within the class's range or set. The classes' values of
-- one or two QIs (__pairs) meet the new rows on those values (a key every engine hashes),
-- and the other QIs are a filter on that join, as in class_values.
-- Slots: __unseen (the new rows, aliased n, numbered sbc_row), __classes (the class table,
-- aliased c), __pairs (a value_pairs query over the class table: eq_class, sbc_key and for
-- two QIs sbc_key2), __match (condition over n and p: the row has the pair's values),
-- __inside (condition over n and c: the row's QIs inside the class's generalization).
-- Parameters: none.
SELECT DISTINCT n.sbc_row, c.eq_class
FROM __unseen AS n
JOIN __pairs AS p ON __match
JOIN __classes AS c ON c.eq_class = p.eq_class
WHERE COALESCE(__inside, FALSE)
ORDER BY n.sbc_row, c.eq_class
