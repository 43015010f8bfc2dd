-- sbc-sql VERSION: the SQL of a run on 't' (k = 3) for postgres.
-- The class ids come from `sbc-sql cluster` with the same table, k and options and
-- --out ids.parquet (--row-id id). Load that file into the table 'sbc_labels'
-- (row_id BIGINT, eq_class BIGINT; eq_class < 0 marks a suppressed row) before running
-- these statements; they join it to the source on its column 'id' = row_id.
-- In order: the statistics and the rows the clustering reads (computed by sbc-sql cluster;
-- shown for reference), the release tables built from the class ids, the verification
-- (each check must report no violation and no missing row before the release is
-- published), NCP, and the release's names and views.
-- Bound parameters, written as literals: k = 3, l = 2, span_0 = 49.0, span_1 = 13817.0, span_2 = 21434400000000.0.

SELECT
  COUNT(*) AS n_rows
FROM "t";

SELECT
  COUNT(*) AS n_rows,
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "age"
      FROM "t"
      WHERE
        NOT "age" IS NULL
    ) AS sbc_subquery_1
  ) AS "distinct_values_0",
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "born"
      FROM "t"
      WHERE
        NOT "born" IS NULL
    ) AS sbc_subquery_2
  ) AS "distinct_values_1",
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "seen"
      FROM "t"
      WHERE
        NOT "seen" IS NULL
    ) AS sbc_subquery_3
  ) AS "distinct_values_2",
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "sex"
      FROM "t"
      WHERE
        NOT "sex" IS NULL
    ) AS sbc_subquery_4
  ) AS "distinct_values_3",
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "zip"
      FROM "t"
      WHERE
        NOT "zip" IS NULL
    ) AS sbc_subquery_5
  ) AS "distinct_values_4",
  COUNT("age") AS "non_null_0",
  COUNT("born") AS "non_null_1",
  COUNT("seen") AS "non_null_2",
  COUNT("sex") AS "non_null_3",
  COUNT("zip") AS "non_null_4"
FROM "t";

SELECT
  MIN(CAST("age" AS DOUBLE PRECISION)) AS "lo_0",
  MIN(
    CAST(CASE WHEN ISFINITE("born") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST("born" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "lo_1",
  MIN(
    CAST(CASE WHEN ISFINITE("seen") THEN CAST(EXTRACT(EPOCH FROM "seen") * 1000000 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "lo_2",
  MAX(CAST("age" AS DOUBLE PRECISION)) AS "hi_0",
  MAX(
    CAST(CASE WHEN ISFINITE("born") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST("born" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "hi_1",
  MAX(
    CAST(CASE WHEN ISFINITE("seen") THEN CAST(EXTRACT(EPOCH FROM "seen") * 1000000 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "hi_2",
  COUNT(*) - COUNT(CAST("age" AS DOUBLE PRECISION)) AS "nulls_0",
  COUNT(*) - COUNT(
    CAST(CASE WHEN ISFINITE("born") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST("born" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "nulls_1",
  COUNT(*) - COUNT(
    CAST(CASE WHEN ISFINITE("seen") THEN CAST(EXTRACT(EPOCH FROM "seen") * 1000000 AS BIGINT) END AS DOUBLE PRECISION)
  ) AS "nulls_2"
FROM "t";

SELECT
  GROUPING("sex") AS "g_0",
  GROUPING("zip") AS "g_1",
  "sex",
  "zip",
  COUNT(*) AS n_rows
FROM "t"
GROUP BY
  GROUPING SETS (
    (
      "sex"
    ),
    (
      "zip"
    ),
    ("sex", "zip")
  )
ORDER BY
  GROUPING("sex"),
  GROUPING("zip"),
  "sex",
  "zip";

SELECT
  COUNT(*) AS n_rows,
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "dis"
      FROM "t"
      WHERE
        NOT "dis" IS NULL
    ) AS sbc_subquery_1
  ) AS "distinct_values_0",
  (
    SELECT
      COUNT(*)
    FROM (
      SELECT DISTINCT
        "pay"
      FROM "t"
      WHERE
        NOT "pay" IS NULL
    ) AS sbc_subquery_2
  ) AS "distinct_values_1",
  COUNT("dis") AS "non_null_0",
  COUNT("pay") AS "non_null_1"
FROM "t";

SELECT
  s."id" AS row_id,
  CAST("age" AS DOUBLE PRECISION) AS "q_0",
  CAST(CASE WHEN ISFINITE("born") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST("born" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION) AS "q_1",
  CAST(CASE WHEN ISFINITE("seen") THEN CAST(EXTRACT(EPOCH FROM "seen") * 1000000 AS BIGINT) END AS DOUBLE PRECISION) AS "q_2",
  "sex" AS "q_3",
  "zip" AS "q_4",
  "dis" AS "q_5",
  CAST("pay" AS DOUBLE PRECISION) AS "q_6"
FROM "t" AS s;

CREATE TABLE "sbc_tmp_t_k3_labelled" AS
SELECT
  s."id" AS sbc_row_id,
  l.row_id AS sbc_label_id,
  l.eq_class AS sbc_eq_class,
  s."age",
  s."born",
  s."seen",
  s."sex",
  s."zip",
  s."dis",
  s."pay"
FROM "t" AS s
FULL JOIN "sbc_labels" AS l
  ON s."id" = l.row_id;

CREATE TABLE "sbc_tmp_t_k3_classes" AS
WITH g AS (
  SELECT
    s.sbc_eq_class AS sbc_eq_class,
    COUNT(*) AS sbc_size,
    MIN(s."age") AS "age_min",
    MIN(s."born") AS "born_min",
    MIN(s."seen") AS "seen_min",
    MAX(s."age") AS "age_max",
    MAX(s."born") AS "born_max",
    MAX(s."seen") AS "seen_max",
    BOOL_OR(s."age" IS NULL) AS "age_has_null",
    BOOL_OR(s."born" IS NULL) AS "born_has_null",
    BOOL_OR(s."seen" IS NULL) AS "seen_has_null",
    ARRAY_AGG(DISTINCT s."sex" ORDER BY s."sex" NULLS LAST) AS "sex",
    ARRAY_AGG(DISTINCT s."zip" ORDER BY s."zip" NULLS LAST) AS "zip"
  FROM (
    SELECT
      l.sbc_eq_class AS sbc_eq_class,
      l."age",
      l."born",
      l."seen",
      l."sex",
      l."zip"
    FROM "sbc_tmp_t_k3_labelled" AS l
    WHERE
      NOT l.sbc_row_id IS NULL AND l.sbc_eq_class >= 0
  ) AS s
  GROUP BY
    s.sbc_eq_class
)
SELECT
  g."sbc_eq_class" AS "eq_class",
  g."sbc_size" AS "class_size",
  g."age_min" AS "age_min",
  g."age_max" AS "age_max",
  g."age_has_null" AS "age_has_null",
  g."born_min" AS "born_min",
  g."born_max" AS "born_max",
  g."born_has_null" AS "born_has_null",
  g."seen_min" AS "seen_min",
  g."seen_max" AS "seen_max",
  g."seen_has_null" AS "seen_has_null",
  g."sex" AS "sex",
  g."zip" AS "zip"
FROM g
ORDER BY
  sbc_eq_class;

CREATE TABLE "sbc_tmp_t_k3_rows" AS
SELECT
  s.sbc_eq_class AS eq_class,
  s."dis" AS "dis",
  s."pay" AS "pay"
FROM (
  SELECT
    l.sbc_eq_class AS sbc_eq_class,
    l."dis",
    l."pay"
  FROM "sbc_tmp_t_k3_labelled" AS l
  WHERE
    NOT l.sbc_row_id IS NULL AND l.sbc_eq_class >= 0
) AS s
ORDER BY
  s.sbc_eq_class,
  s."dis",
  s."pay";

SELECT
  COUNT(*) FILTER(WHERE
    sbc_classes."sbc_size" < 3) AS "violations",
  MIN(sbc_classes."sbc_size") AS "smallest_class"
FROM (
  SELECT
    eq_class,
    COUNT(*) AS sbc_size
  FROM "sbc_tmp_t_k3_rows"
  GROUP BY
    eq_class
) AS "sbc_classes";

SELECT
  COUNT(*) FILTER(WHERE
    sbc_classes."sbc_distinct" < 2) AS "violations",
  MIN(sbc_classes."sbc_distinct") AS "l_diversity"
FROM (
  WITH q AS (
    SELECT
      eq_class,
      "dis" AS sbc_value,
      COUNT(*) AS sbc_count
    FROM "sbc_tmp_t_k3_rows"
    GROUP BY
      eq_class,
      "dis"
  ), sizes AS (
    SELECT
      eq_class,
      COUNT(*) AS sbc_size
    FROM "sbc_tmp_t_k3_rows"
    GROUP BY
      eq_class
  ), shares AS (
    SELECT
      q.eq_class,
      CAST(q.sbc_count AS DOUBLE PRECISION) / NULLIF(s.sbc_size, 0) AS sbc_q
    FROM q
    JOIN sizes AS s
      ON s.eq_class = q.eq_class
  )
  SELECT
    eq_class,
    COUNT(*) AS sbc_distinct,
    SUM(CAST(-sbc_q * LN(sbc_q) AS DECIMAL(38, 18))) AS sbc_entropy
  FROM shares
  GROUP BY
    eq_class
) AS "sbc_classes";

SELECT
  COUNT(*) FILTER(WHERE
    sbc_classes."sbc_distinct" < 2) AS "violations",
  MIN(sbc_classes."sbc_distinct") AS "l_diversity"
FROM (
  WITH q AS (
    SELECT
      eq_class,
      "pay" AS sbc_value,
      COUNT(*) AS sbc_count
    FROM "sbc_tmp_t_k3_rows"
    GROUP BY
      eq_class,
      "pay"
  ), sizes AS (
    SELECT
      eq_class,
      COUNT(*) AS sbc_size
    FROM "sbc_tmp_t_k3_rows"
    GROUP BY
      eq_class
  ), shares AS (
    SELECT
      q.eq_class,
      CAST(q.sbc_count AS DOUBLE PRECISION) / NULLIF(s.sbc_size, 0) AS sbc_q
    FROM q
    JOIN sizes AS s
      ON s.eq_class = q.eq_class
  )
  SELECT
    eq_class,
    COUNT(*) AS sbc_distinct,
    SUM(CAST(-sbc_q * LN(sbc_q) AS DECIMAL(38, 18))) AS sbc_entropy
  FROM shares
  GROUP BY
    eq_class
) AS "sbc_classes";

WITH sizes AS MATERIALIZED (
  SELECT
    eq_class,
    COUNT(*) AS sbc_size
  FROM "sbc_tmp_t_k3_rows"
  GROUP BY
    eq_class
), labelled AS MATERIALIZED (
  SELECT
    s.sbc_eq_class AS sbc_eq_class,
    s."age",
    s."born",
    s."seen",
    s."sex",
    s."zip"
  FROM (
    SELECT
      l.sbc_eq_class AS sbc_eq_class,
      l."age",
      l."born",
      l."seen",
      l."sex",
      l."zip"
    FROM "sbc_tmp_t_k3_labelled" AS l
    WHERE
      NOT l.sbc_row_id IS NULL AND l.sbc_eq_class >= 0
  ) AS s
)
SELECT
  (
    SELECT
      COUNT(*)
    FROM "sbc_tmp_t_k3_classes"
  ) AS classes,
  (
    SELECT
      COUNT(DISTINCT eq_class)
    FROM "sbc_tmp_t_k3_classes"
  ) AS distinct_classes,
  (
    SELECT
      MIN(sbc_size)
    FROM sizes
  ) AS smallest,
  (
    SELECT
      SUM(sbc_size)
    FROM sizes
  ) AS released,
  (
    SELECT
      COUNT(*)
    FROM "sbc_tmp_t_k3_classes" AS c
    FULL JOIN sizes AS z
      ON c.eq_class = z.eq_class
    WHERE
      c.class_size IS DISTINCT FROM z.sbc_size
  ) AS unmatched,
  (
    SELECT
      COUNT(*)
    FROM labelled AS s
    LEFT JOIN "sbc_tmp_t_k3_classes" AS g
      ON g.eq_class = s.sbc_eq_class
    WHERE
      NOT COALESCE(
        CASE
          WHEN s."age" IS NULL
          THEN g."age_has_null"
          ELSE s."age" BETWEEN g."age_min" AND g."age_max"
        END
        AND CASE
          WHEN s."born" IS NULL
          THEN g."born_has_null"
          ELSE s."born" BETWEEN g."born_min" AND g."born_max"
        END
        AND CASE
          WHEN s."seen" IS NULL
          THEN g."seen_has_null"
          ELSE s."seen" BETWEEN g."seen_min" AND g."seen_max"
        END,
        FALSE
      )
  ) AS outside,
  (
    SELECT
      COUNT(*)
    FROM labelled AS s
    WHERE
      NOT EXISTS(
        SELECT
          1
        FROM (
          SELECT
            eq_class,
            UNNEST("sex") AS sbc_value
          FROM "sbc_tmp_t_k3_classes"
        ) AS u
        WHERE
          s.sbc_eq_class = u.eq_class
          AND (
            COALESCE(s."sex", '') = COALESCE(u.sbc_value, '')
            AND (
              s."sex" IS NULL
            ) = (
              u.sbc_value IS NULL
            )
          )
      )
  ) AS "sex_outside",
  (
    SELECT
      COUNT(*)
    FROM labelled AS s
    WHERE
      NOT EXISTS(
        SELECT
          1
        FROM (
          SELECT
            eq_class,
            UNNEST("zip") AS sbc_value
          FROM "sbc_tmp_t_k3_classes"
        ) AS u
        WHERE
          s.sbc_eq_class = u.eq_class
          AND (
            COALESCE(s."zip", '') = COALESCE(u.sbc_value, '')
            AND (
              s."zip" IS NULL
            ) = (
              u.sbc_value IS NULL
            )
          )
      )
  ) AS "zip_outside";

SELECT
  (
    SELECT
      COUNT(*)
    FROM "t"
  ) AS source_rows,
  COUNT(l.sbc_label_id) AS labels,
  COUNT(*) FILTER(WHERE
    l.sbc_row_id IS NULL) AS strays,
  COUNT(*) FILTER(WHERE
    l.sbc_eq_class < 0) AS suppressed,
  COUNT(*) FILTER(WHERE
    l.sbc_label_id IS NULL) AS unlabelled
FROM "sbc_tmp_t_k3_labelled" AS l;

WITH expected AS (
  SELECT
    s.sbc_eq_class AS eq_class,
    s."dis",
    s."pay",
    1 AS sbc_rows
  FROM (
    SELECT
      l.sbc_eq_class AS sbc_eq_class,
      l."dis",
      l."pay"
    FROM "sbc_tmp_t_k3_labelled" AS l
    WHERE
      NOT l.sbc_row_id IS NULL AND l.sbc_eq_class >= 0
  ) AS s
), released AS (
  SELECT
    r.eq_class,
    r."dis",
    r."pay",
    -1 AS sbc_rows
  FROM "sbc_tmp_t_k3_rows" AS r
), balance AS (
  SELECT
    SUM(sbc_rows) AS sbc_rows
  FROM (
    SELECT
      *
    FROM expected
    UNION ALL
    SELECT
      *
    FROM released
  ) AS b
  GROUP BY
    b.eq_class,
    b."dis",
    b."pay"
)
SELECT
  COALESCE(SUM(CASE WHEN sbc_rows > 0 THEN sbc_rows ELSE 0 END), 0) AS missing,
  COALESCE(SUM(CASE WHEN sbc_rows < 0 THEN -sbc_rows ELSE 0 END), 0) AS extra
FROM balance;

WITH src AS (
  SELECT
    COUNT(*) AS n_rows
  FROM "t"
), rel AS (
  SELECT
    COALESCE(SUM(r."class_size"), 0) AS released,
    SUM(
      r."class_size" * CASE
        WHEN r."age_min" IS NULL
        THEN 0.0
        WHEN r."age_has_null"
        THEN 1.0
        ELSE COALESCE(
          CAST((
            CAST(r."age_max" AS DOUBLE PRECISION) - CAST(r."age_min" AS DOUBLE PRECISION)
          ) AS DOUBLE PRECISION) / NULLIF(49.0, 0),
          0.0
        )
      END
    ) AS "cost_0",
    SUM(
      r."class_size" * CASE
        WHEN r."born_min" IS NULL
        THEN 0.0
        WHEN r."born_has_null"
        THEN 1.0
        ELSE COALESCE(
          CAST((
            CAST(CASE WHEN ISFINITE(r."born_max") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST(r."born_max" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION) - CAST(CASE WHEN ISFINITE(r."born_min") AND ISFINITE(CAST('1970-01-01' AS DATE)) THEN CAST(EXTRACT(epoch FROM CAST(r."born_min" AS TIMESTAMP) - CAST(CAST('1970-01-01' AS DATE) AS TIMESTAMP)) / 86400 AS BIGINT) END AS DOUBLE PRECISION)
          ) AS DOUBLE PRECISION) / NULLIF(13817.0, 0),
          0.0
        )
      END
    ) AS "cost_1",
    SUM(
      r."class_size" * CASE
        WHEN r."seen_min" IS NULL
        THEN 0.0
        WHEN r."seen_has_null"
        THEN 1.0
        ELSE COALESCE(
          CAST((
            CAST(CASE WHEN ISFINITE(r."seen_max") THEN CAST(EXTRACT(EPOCH FROM r."seen_max") * 1000000 AS BIGINT) END AS DOUBLE PRECISION) - CAST(CASE WHEN ISFINITE(r."seen_min") THEN CAST(EXTRACT(EPOCH FROM r."seen_min") * 1000000 AS BIGINT) END AS DOUBLE PRECISION)
          ) AS DOUBLE PRECISION) / NULLIF(21434400000000.0, 0),
          0.0
        )
      END
    ) AS "cost_2",
    SUM(
      r."class_size" * CASE
        WHEN CARDINALITY(r."sex") <= 1
        THEN 0.0
        ELSE CAST(CARDINALITY(r."sex") AS DOUBLE PRECISION) / NULLIF(2, 0)
      END
    ) AS "cost_3",
    SUM(
      r."class_size" * CASE
        WHEN CARDINALITY(r."zip") <= 1
        THEN 0.0
        ELSE CAST(CARDINALITY(r."zip") AS DOUBLE PRECISION) / NULLIF(7, 0)
      END
    ) AS "cost_4"
  FROM "sbc_tmp_t_k3_classes" AS r
  CROSS JOIN src
)
SELECT
  src.n_rows,
  rel.*
FROM src
CROSS JOIN rel;

SELECT
  COUNT(*) AS classes,
  MIN(size) AS smallest,
  AVG(size) AS mean,
  MAX(size) AS largest,
  SUM(size) AS released
FROM (
  SELECT
    r.eq_class,
    SUM(r."class_size") AS size
  FROM "sbc_tmp_t_k3_classes" AS r
  GROUP BY
    r.eq_class
) AS g;

ALTER TABLE "sbc_tmp_t_k3_rows"
RENAME TO "t_k3_rows";

ALTER TABLE "sbc_tmp_t_k3_classes"
RENAME TO "t_k3_classes";

CREATE VIEW "t_k3" AS
SELECT
  r.eq_class AS eq_class,
  c."age_min" AS "age_min",
  c."age_max" AS "age_max",
  c."age_has_null" AS "age_has_null",
  c."born_min" AS "born_min",
  c."born_max" AS "born_max",
  c."born_has_null" AS "born_has_null",
  c."seen_min" AS "seen_min",
  c."seen_max" AS "seen_max",
  c."seen_has_null" AS "seen_has_null",
  c."sex" AS "sex",
  c."zip" AS "zip",
  r."dis" AS "dis",
  r."pay" AS "pay"
FROM "t_k3_rows" AS r
JOIN "t_k3_classes" AS c
  ON r.eq_class = c.eq_class;

CREATE VIEW "t_k3_view" AS
WITH t AS (
  SELECT
    r.eq_class AS sbc_eq_class,
    CASE
      WHEN r."age_min" IS NULL
      THEN 'NULL'
      ELSE CASE
        WHEN r."age_min" = r."age_max"
        THEN CAST(r."age_min" AS TEXT)
        ELSE CAST(r."age_min" AS TEXT) || '-' || CAST(r."age_max" AS TEXT)
      END || CASE WHEN r."age_has_null" THEN '|NULL' ELSE '' END
    END AS "age",
    CASE
      WHEN r."born_min" IS NULL
      THEN 'NULL'
      ELSE CASE
        WHEN r."born_min" = r."born_max"
        THEN CAST(r."born_min" AS TEXT)
        ELSE CAST(r."born_min" AS TEXT) || '..' || CAST(r."born_max" AS TEXT)
      END || CASE WHEN r."born_has_null" THEN '|NULL' ELSE '' END
    END AS "born",
    CASE
      WHEN r."seen_min" IS NULL
      THEN 'NULL'
      ELSE CASE
        WHEN r."seen_min" = r."seen_max"
        THEN CAST(r."seen_min" AS TEXT)
        ELSE CAST(r."seen_min" AS TEXT) || '..' || CAST(r."seen_max" AS TEXT)
      END || CASE WHEN r."seen_has_null" THEN '|NULL' ELSE '' END
    END AS "seen",
    ARRAY_TO_STRING(
      ARRAY(SELECT CASE
        WHEN v IS NULL
        THEN 'NULL'
        WHEN CAST(v AS TEXT) = 'NULL'
        THEN '\NULL'
        ELSE REPLACE(REPLACE(CAST(v AS TEXT), '\', '\\'), '|', '\|')
      END FROM UNNEST(r."sex") WITH ORDINALITY AS sbc_u(v, sbc_n) ORDER BY sbc_n),
      '|'
    ) AS "sex",
    ARRAY_TO_STRING(
      ARRAY(SELECT CASE
        WHEN v IS NULL
        THEN 'NULL'
        WHEN CAST(v AS TEXT) = 'NULL'
        THEN '\NULL'
        ELSE REPLACE(REPLACE(CAST(v AS TEXT), '\', '\\'), '|', '\|')
      END FROM UNNEST(r."zip") WITH ORDINALITY AS sbc_u(v, sbc_n) ORDER BY sbc_n),
      '|'
    ) AS "zip",
    r."dis" AS "dis",
    r."pay" AS "pay"
  FROM "t_k3" AS r
)
SELECT
  t.sbc_eq_class AS eq_class,
  t."age" AS "age",
  t."born" AS "born",
  t."seen" AS "seen",
  t."sex" AS "sex",
  t."zip" AS "zip",
  t."dis" AS "dis",
  t."pay" AS "pay"
FROM t;

DROP TABLE IF EXISTS "sbc_tmp_t_k3_labelled";
