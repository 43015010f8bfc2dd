-- refresh_rest: the new rows no published class took, as a table of the source's columns
-- (the refresh clusters them among themselves as the release's run would).
-- Slots: __rest (the table made), __unseen (the new rows, aliased u), __ids (sbc_row: the
-- rows left), __col (list of the source's columns). Parameters: none.
CREATE TABLE __rest AS
SELECT u.__col
FROM __unseen AS u
JOIN __ids AS i ON i.sbc_row = u.sbc_row
ORDER BY u.sbc_row
