SELECT COUNT(*) AS tuples FROM (SELECT DISTINCT 1 AS one, "dis" FROM "we""ird; drop table x") AS d
