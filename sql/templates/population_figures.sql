-- population_figures: a release's per-class population matches (population_matches) kept as
-- a temporary table for the run that checks them, so that k-map's and delta-presence's
-- checks and the figures the run reports read them once.
-- Slots: __figures (the table made), __matches (a population_matches query). Parameters:
-- none.
CREATE TEMPORARY TABLE __figures AS
SELECT m.eq_class, m.sbc_size, m.sbc_population FROM __matches AS m
