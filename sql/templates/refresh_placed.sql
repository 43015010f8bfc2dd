-- refresh_placed: the new rows a refresh places into published classes, with their class
-- and the columns released verbatim.
-- Slots: __unseen (the new rows, aliased u), __placed (sbc_row, eq_class), __verb (list of
-- the columns released verbatim). Parameters: none.
SELECT p.eq_class, u.__verb
FROM __unseen AS u
JOIN __placed AS p ON p.sbc_row = u.sbc_row
