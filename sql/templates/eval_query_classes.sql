-- eval_query_classes: per row of eval_classes (a class's generalized tuple), its size and
-- its ranges as numbers and sets as lists of text: the queries' estimates are summed from
-- them, one pass over the classes per batch.
-- Slots: __classes (eval_classes), __value (list of aliased expressions over g).
-- Parameters: none.
SELECT g.sbc_size, __value FROM __classes AS g
