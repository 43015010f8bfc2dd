-- create_tuples: the source's distinct QI tuples, each with the number of rows holding it
-- (NULL is a value like any other): what an algorithm that clusters tuples whole
-- (Clusterer.tuples) reads instead of the rows, so its work follows the distinct tuples.
-- One GROUP BY in the engine; the rows are labelled later by a join on the tuple
-- (tuple_labels), never pulled.
-- Slots: __tuples (new temporary table), __source (table), __qi (list of the QIs).
-- Parameters: none.
CREATE TEMPORARY TABLE __tuples AS
SELECT s.__qi AS __qi, COUNT(*) AS sbc_count
FROM __source AS s
GROUP BY s.__qi
