-- refresh_sensitive: the new rows' sensitive values, in row order.
-- Slots: __unseen (the new rows, numbered sbc_row), __sens (list of the sensitive columns).
-- Parameters: none.
SELECT __sens
FROM __unseen
ORDER BY sbc_row
