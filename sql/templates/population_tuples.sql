-- population_tuples: a population table's distinct QI tuples, each with the rows holding it
-- (NULL a value like any other): what k-map and delta-presence match a release's classes
-- against, read once by the clustering (pull_population) and by verification
-- (population_matches), so that their work follows the distinct tuples, not the people.
-- Slots: __population (the population table), __qi (list of the QIs). Parameters: none.
SELECT s.__qi AS __qi, COUNT(*) AS sbc_rows
FROM __population AS s
GROUP BY s.__qi
