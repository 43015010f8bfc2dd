-- create_view: the readable view of a release: one text column per QI ('25-40' for a
-- numeric range, '2001-01-01..2001-03-04' for dates and timestamps, 'F|M' for a value
-- set, a single value when the class has one, 'NULL' for NULL).
-- Slots: __view (new view), __release (table), __num and __tnum (lists of numeric and
-- temporal QIs), __cat (list of categorical QIs), __projection (list of expressions over t).
-- Parameters: none.
CREATE VIEW __view AS
WITH t AS (
  SELECT
    r.*,
    CASE
      WHEN r.__num_min IS NULL THEN 'NULL'
      ELSE CASE
        WHEN r.__num_min = r.__num_max THEN CAST(r.__num_min AS TEXT)
        ELSE CAST(r.__num_min AS TEXT) || '-' || CAST(r.__num_max AS TEXT)
      END || CASE WHEN r.__num_has_null THEN '|NULL' ELSE '' END
    END AS __num_sbc_text,
    CASE
      WHEN r.__tnum_min IS NULL THEN 'NULL'
      ELSE CASE
        WHEN r.__tnum_min = r.__tnum_max THEN CAST(r.__tnum_min AS TEXT)
        ELSE CAST(r.__tnum_min AS TEXT) || '..' || CAST(r.__tnum_max AS TEXT)
      END || CASE WHEN r.__tnum_has_null THEN '|NULL' ELSE '' END
    END AS __tnum_sbc_text,
    ARRAY_TO_STRING(LIST_TRANSFORM(r.__cat, LAMBDA v : COALESCE(CAST(v AS TEXT), 'NULL')), '|')
      AS __cat_sbc_text
  FROM __release AS r
)
SELECT __projection FROM t
