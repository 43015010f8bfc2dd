-- update_class_mode: a microaggregated class table's QI released as its class's mode set
-- from class_mode's rows (a class whose values are all NULL keeps NULL).
-- Slots: __classes (the class table create_classes_micro made), __qi (the QI), __modes (a
-- class_mode query of that QI). Parameters: none.
UPDATE __classes AS c SET __qi = m.sbc_value
FROM __modes AS m
WHERE c.eq_class = m.sbc_eq_class
