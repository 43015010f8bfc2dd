-- model_rows: the columns a classifier reads, one row per row of the table (the input or
-- the release), unordered (the caller sorts them, so the order is every engine's): numeric
-- QIs as DOUBLE (a release's range as its bounds and NULL flag), categorical QIs as text (a
-- release's value set as a list of text), the verbatim columns as stored, the target as text.
-- Slots: __source (table), __value (list of aliased expressions over the table's columns).
-- Parameters: none.
SELECT __value FROM __source
