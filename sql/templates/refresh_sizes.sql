-- refresh_sizes: the published classes' sizes once a refresh has placed new rows into them.
-- Slots: __classes (the class table), __placed (sbc_row, eq_class: the new rows placed).
-- Parameters: none.
UPDATE __classes
SET class_size = class_size + a.sbc_rows
FROM (SELECT eq_class, COUNT(*) AS sbc_rows FROM __placed GROUP BY eq_class) AS a
WHERE __classes.eq_class = a.eq_class
