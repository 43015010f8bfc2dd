-- kept_determinants: whether a column released as it is tells a quasi-identifier's value.
-- One row per grouping set of the source, all in one scan: one set per kept column (its
-- groups: the rows that share one of its values, NULL one of them), and the empty set (the
-- whole table). Per set: its flags (flag_i = 1 where kept column i is not in the set), its
-- groups, and per quasi-identifier the rows that sit in a group holding one value of it
-- (NULL one of them): the rows on which the kept column's value gives the QI's. Over the
-- empty set that count is the table's rows when the QI holds one value, else 0.
-- Slots: __source (table), __kept (list of the kept columns) zipped with __flag (list of
-- names for their flags), __sets (a GROUPING SETS expression: each kept column, then ()),
-- __single (list: per QI, 1 when a group holds one value of it, else 0) zipped with __one
-- (list of names for them), __rows (a name for a group's rows). The names are the
-- subquery's own: no source column is read by them.
-- Parameters: none.
SELECT
  __flag,
  COUNT(*) AS sbc_groups,
  SUM(__rows) AS sbc_total,
  SUM(__one * __rows) AS sbc_determined
FROM (
  SELECT
    GROUPING(__kept) AS __flag,
    COUNT(*) AS __rows,
    __single AS __one
  FROM __source
  GROUP BY __sets
) AS sbc_kept_groups
GROUP BY __flag
