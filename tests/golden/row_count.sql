SELECT COUNT(*) AS n_rows FROM "we""ird; drop table x"
