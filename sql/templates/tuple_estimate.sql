-- tuple_estimate: one row, about how many distinct QI tuples the source holds (a
-- HyperLogLog estimate over each row's QIs as one value, within a few percent; one scan, a
-- third of the time of counting them exactly): whether clustering tuples pays is read
-- from it before any tuple is stored, the same way in a dry run and a real one.
-- Slots: __source (table, aliased s), __row (a row's QIs as one row value). Parameters: none.
SELECT APPROX_COUNT_DISTINCT(__row) AS tuples FROM __source AS s
