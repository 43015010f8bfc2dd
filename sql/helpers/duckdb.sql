-- sbc-sql's query helpers for DuckDB: count a release's rows in a range query honestly.
--
-- A release holds each class's range (<qi>_min, <qi>_max, <qi>_has_null) on a numeric or
-- date QI and its set of values (a list) on a categorical QI, not the rows' own values. A
-- count over a query range then has three honest answers:
--   * sbc_range_inside / sbc_set_inside: the row's whole range or set lies in the query, so
--     the row surely does: their COUNT is a lower bound of the true count;
--   * sbc_range_overlaps / sbc_set_overlaps: the range or set meets the query, so the row
--     may: their COUNT is an upper bound;
--   * sbc_range_share / sbc_set_share: the share of the range or set inside the query,
--     values spread uniformly over each range or set: their SUM (a product over QIs per
--     row) is the estimate sbc-sql evaluate's query error measures.
-- A range over dates counts days; give a timestamp range as epoch(...) of each bound.
-- A NULL bound (a class of NULLs) is inside no query, and a class holding NULLs beside its
-- range (<qi>_has_null) is not inside one. In a set, NULL is one of the values and matches
-- no wanted value.
--
-- Load once per database (the macros are kept in the file): duckdb clinic.duckdb < duckdb.sql
-- or, from Python: con.execute(sbc_sql.query_helpers("duckdb")).
-- Statements are separated by a line holding only ';'.

CREATE OR REPLACE MACRO sbc_range_inside(lo, hi, has_null, qlo, qhi) AS
    COALESCE(lo >= qlo AND hi <= qhi AND NOT COALESCE(has_null, FALSE), FALSE)
;

CREATE OR REPLACE MACRO sbc_range_overlaps(lo, hi, qlo, qhi) AS
    COALESCE(lo <= qhi AND hi >= qlo, FALSE)
;

CREATE OR REPLACE MACRO sbc_range_share(lo, hi, qlo, qhi) AS
    CASE
        WHEN lo IS NULL THEN 0.0
        WHEN hi = lo THEN CASE WHEN lo BETWEEN qlo AND qhi THEN 1.0 ELSE 0.0 END
        ELSE GREATEST(CAST(LEAST(qhi, hi) - GREATEST(qlo, lo) AS DOUBLE), 0.0) / CAST(hi - lo AS DOUBLE)
    END
;

CREATE OR REPLACE MACRO sbc_set_inside(vals, wanted) AS
    COALESCE(list_has_all(wanted, vals) AND list_count(vals) = len(vals), FALSE)
;

CREATE OR REPLACE MACRO sbc_set_overlaps(vals, wanted) AS
    COALESCE(list_has_any(vals, wanted), FALSE)
;

CREATE OR REPLACE MACRO sbc_set_share(vals, wanted) AS
    CAST(len(list_intersect(vals, wanted)) AS DOUBLE) / NULLIF(len(vals), 0)
;
