SELECT rowid AS row_id, CAST("se""l ect" AS DOUBLE) AS "q_0", CAST(DATE_DIFF('day', CAST('1970-01-01' AS DATE), "d") AS DOUBLE) AS "q_1", "c at" AS "q_2", "c2" AS "q_3" FROM "we""ird; drop table x"
