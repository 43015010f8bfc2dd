SELECT b.eq_class, UNNEST(b."c at") AS sbc_key FROM (SELECT DISTINCT eq_class, "c at" FROM "rel""ease; drop table x") AS b
