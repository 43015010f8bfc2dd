-- distinct_classes: how many classes a release holds (its distinct eq_class values): a
-- release one row per released row, or a class table one row per class.
-- Slots: __release (table or view, eq_class among its columns). Parameters: none.
SELECT COUNT(DISTINCT eq_class) AS classes FROM __release
