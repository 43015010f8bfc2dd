-- value_pairs_two: the (class, value, value) triples of two QIs in a release: each class's
-- pairs of the first QI crossed with its pairs of the second. Joined to the source on both
-- values, they meet each class with fewer source rows than either QI alone.
-- Slots: __first and __second (value_pairs queries of two QIs). Parameters: none.
SELECT a.eq_class, a.sbc_key, b.sbc_key AS sbc_key2
FROM __first AS a
JOIN __second AS b ON b.eq_class = a.eq_class
