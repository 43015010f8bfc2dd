-- create_view: the readable view of a release: eq_class, then the source's columns in order,
-- one text column per QI ('25-40' for a numeric range, '2001-01-01..2001-03-04' for dates
-- and timestamps, 'F|M' for a value set, a single value when the class has one), the other
-- columns as they are.
-- The text reads one way only: NULL shows as the word NULL (a range's '|NULL' when the
-- class also holds NULL); in a value set each value is escaped, a backslash as '\\', a '|'
-- as '\|', and a value that is the text NULL as '\NULL', so 'a|b' is not {a, b} and
-- 'NULL' is not NULL. Splitting on the '|' not preceded by a backslash and dropping each
-- escaping backslash gives the values back.
-- t holds only eq_class (as sbc_eq_class, a name no source column may take) and one column
-- per source column under that column's own name, computed from the release's columns: a
-- released column can never stand in for a QI's text (as a column named <qi>_sbc_text could
-- when the text was computed beside r.*).
-- A microaggregated QI's one value shows as its text (NULL as the word NULL); a
-- categorical mode is escaped as a value of a set is.
-- Slots: __view (new view), __release (table), __num and __tnum (lists of numeric and
-- temporal QIs released as ranges), __one (list of numeric QIs released as one value),
-- __mode (list of categorical QIs released as one value), __cat (list of categorical QIs
-- released as value sets), __verb (list of the columns released
-- verbatim), __col (list of the view's columns after eq_class, in source order).
-- Parameters: none.
CREATE VIEW __view AS
WITH t AS (
  SELECT
    r.eq_class AS sbc_eq_class,
    CASE
      WHEN r.__num_min IS NULL THEN 'NULL'
      ELSE CASE
        WHEN r.__num_min = r.__num_max THEN CAST(r.__num_min AS TEXT)
        ELSE CAST(r.__num_min AS TEXT) || '-' || CAST(r.__num_max AS TEXT)
      END || CASE WHEN r.__num_has_null THEN '|NULL' ELSE '' END
    END AS __num,
    CASE
      WHEN r.__tnum_min IS NULL THEN 'NULL'
      ELSE CASE
        WHEN r.__tnum_min = r.__tnum_max THEN CAST(r.__tnum_min AS TEXT)
        ELSE CAST(r.__tnum_min AS TEXT) || '..' || CAST(r.__tnum_max AS TEXT)
      END || CASE WHEN r.__tnum_has_null THEN '|NULL' ELSE '' END
    END AS __tnum,
    CASE WHEN r.__one IS NULL THEN 'NULL' ELSE CAST(r.__one AS TEXT) END AS __one,
    CASE
      WHEN r.__mode IS NULL THEN 'NULL'
      WHEN CAST(r.__mode AS TEXT) = 'NULL' THEN '\NULL'
      ELSE REPLACE(REPLACE(CAST(r.__mode AS TEXT), '\', '\\'), '|', '\|')
    END AS __mode,
    ARRAY_TO_STRING(
      LIST_TRANSFORM(
        r.__cat,
        LAMBDA v : CASE
          WHEN v IS NULL THEN 'NULL'
          WHEN CAST(v AS TEXT) = 'NULL' THEN '\NULL'
          ELSE REPLACE(REPLACE(CAST(v AS TEXT), '\', '\\'), '|', '\|')
        END
      ),
      '|'
    ) AS __cat,
    r.__verb AS __verb
  FROM __release AS r
)
SELECT t.sbc_eq_class AS eq_class, t.__col AS __col FROM t
