-- pull_population: the population's distinct QI tuples (population_tuples) streamed to the
-- clustering step as pull_rows streams the input's rows, each with its rows: numbers as
-- DOUBLE (dates, timestamps as numbers), categoricals as stored.
-- Slots: __tuples (a population_tuples query, aliased s), __qi (list of expressions over s,
-- as pull_rows converts them). Parameters: none.
SELECT __qi AS q, s.sbc_rows AS sbc_rows FROM __tuples AS s
