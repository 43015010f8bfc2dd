SELECT eq_class, COUNT(*) AS sbc_size FROM "ro""ws; drop table x" GROUP BY eq_class
