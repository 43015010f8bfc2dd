-- sbc-sql's query helpers for PostgreSQL: count a release's rows in a range query honestly.
--
-- A release holds each class's range (<qi>_min, <qi>_max, <qi>_has_null) on a numeric or
-- date QI and its set of values (an array) on a categorical QI, not the rows' own values. A
-- count over a query range then has three honest answers:
--   * sbc_range_inside / sbc_set_inside: the row's whole range or set lies in the query, so
--     the row surely does: their COUNT is a lower bound of the true count;
--   * sbc_range_overlaps / sbc_set_overlaps: the range or set meets the query, so the row
--     may: their COUNT is an upper bound;
--   * sbc_range_share / sbc_set_share: the share of the range or set inside the query,
--     values spread uniformly over each range or set: their SUM (a product over QIs per
--     row) is the estimate sbc-sql evaluate's query error measures.
-- A range over dates counts days; give a timestamp range as extract(epoch FROM ...) of each
-- bound. A NULL bound (a class of NULLs) is inside no query, and a class holding NULLs beside
-- its range (<qi>_has_null) is not inside one. In a set, NULL is one of the values and
-- matches no wanted value.
--
-- Plain SQL functions, IMMUTABLE and PARALLEL SAFE, created in the first schema of your
-- search_path (set search_path first to pick another); they need no superuser and no
-- PL/Python: psql -d clinic -f postgres.sql (PostgreSQL 13 or later).
-- Statements are separated by a line holding only ';'.

CREATE OR REPLACE FUNCTION sbc_range_inside(lo anycompatible, hi anycompatible, has_null boolean,
                                            qlo anycompatible, qhi anycompatible)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT COALESCE(lo >= qlo AND hi <= qhi AND NOT COALESCE(has_null, false), false)
$sbc$
;
CREATE OR REPLACE FUNCTION sbc_range_overlaps(lo anycompatible, hi anycompatible,
                                              qlo anycompatible, qhi anycompatible)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT COALESCE(lo <= qhi AND hi >= qlo, false)
$sbc$
;
CREATE OR REPLACE FUNCTION sbc_range_share(lo anycompatible, hi anycompatible,
                                           qlo anycompatible, qhi anycompatible)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT CASE
        WHEN lo IS NULL THEN 0.0
        WHEN hi = lo THEN CASE WHEN lo BETWEEN qlo AND qhi THEN 1.0 ELSE 0.0 END
        ELSE GREATEST(CAST(LEAST(qhi, hi) - GREATEST(qlo, lo) AS double precision), 0.0)
            / CAST(hi - lo AS double precision)
    END
$sbc$
;
CREATE OR REPLACE FUNCTION sbc_set_inside(vals anycompatiblearray, wanted anycompatiblearray)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT NOT EXISTS (SELECT 1 FROM unnest(vals) AS v WHERE v IS NULL OR NOT COALESCE(v = ANY (wanted), false))
$sbc$
;
CREATE OR REPLACE FUNCTION sbc_set_overlaps(vals anycompatiblearray, wanted anycompatiblearray)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT EXISTS (SELECT 1 FROM unnest(vals) AS v WHERE v = ANY (wanted))
$sbc$
;
CREATE OR REPLACE FUNCTION sbc_set_share(vals anycompatiblearray, wanted anycompatiblearray)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $sbc$
SELECT (SELECT CAST(count(*) FILTER (WHERE v = ANY (wanted)) AS double precision)
            FROM unnest(vals) AS v) / NULLIF(cardinality(vals), 0)
$sbc$
;
