-- k_anonymity: one row per class of a release: eq_class and sbc_size, the class's rows in
-- the release. k-anonymity asks sbc_size >= k of every class (with one generalized tuple per
-- class, checked apart, every tuple is then shared by at least k rows).
-- privacy/k_anonymity.py folds these rows into its check (classes with sbc_size < $k)
-- and its measure (the smallest class).
-- Slots: __release (a table or view with one row per released row, eq_class among its
-- columns: a release, or the row table of one). Parameters: none.
SELECT eq_class, COUNT(*) AS sbc_size FROM __release GROUP BY eq_class
