-- max_class: the largest class id of a class table (NULL: no class).
-- Slots: __classes (the class table). Parameters: none.
SELECT MAX(eq_class) FROM __classes
