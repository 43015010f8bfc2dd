-- What in the schema named $1 a role that is not a superuser could use to run its own code in
-- a superuser's call to sbc's functions (install-sql refuses to install beside it): the
-- schema's owner (rank 1), a CREATE on the schema granted to anyone else (rank 2; grantee 0
-- is PUBLIC), and every object in the schema owned by one (rank 3: relations, types,
-- functions, operators and the other kinds of object a schema holds that have an owner).
-- One row per finding, rank first: (rank, what it is, the role's name). No row: all is
-- owned by superusers, or there is no such schema. Run with search_path = pg_catalog.
WITH schema AS (
    SELECT oid, nspowner, nspacl FROM pg_catalog.pg_namespace WHERE nspname = $1
),
objects (classid, objid, owner) AS (
    SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, o.oid, o.relowner
    FROM pg_catalog.pg_class o JOIN schema s ON o.relnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, o.oid, o.typowner
    FROM pg_catalog.pg_type o JOIN schema s ON o.typnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, o.oid, o.proowner
    FROM pg_catalog.pg_proc o JOIN schema s ON o.pronamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_operator'::pg_catalog.regclass, o.oid, o.oprowner
    FROM pg_catalog.pg_operator o JOIN schema s ON o.oprnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_collation'::pg_catalog.regclass, o.oid, o.collowner
    FROM pg_catalog.pg_collation o JOIN schema s ON o.collnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_conversion'::pg_catalog.regclass, o.oid, o.conowner
    FROM pg_catalog.pg_conversion o JOIN schema s ON o.connamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_opclass'::pg_catalog.regclass, o.oid, o.opcowner
    FROM pg_catalog.pg_opclass o JOIN schema s ON o.opcnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_opfamily'::pg_catalog.regclass, o.oid, o.opfowner
    FROM pg_catalog.pg_opfamily o JOIN schema s ON o.opfnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_ts_config'::pg_catalog.regclass, o.oid, o.cfgowner
    FROM pg_catalog.pg_ts_config o JOIN schema s ON o.cfgnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_ts_dict'::pg_catalog.regclass, o.oid, o.dictowner
    FROM pg_catalog.pg_ts_dict o JOIN schema s ON o.dictnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, o.oid, o.stxowner
    FROM pg_catalog.pg_statistic_ext o JOIN schema s ON o.stxnamespace = s.oid
    UNION ALL
    SELECT 'pg_catalog.pg_extension'::pg_catalog.regclass, o.oid, o.extowner
    FROM pg_catalog.pg_extension o JOIN schema s ON o.extnamespace = s.oid
),
findings (rank, what, role) AS (
    SELECT 1, 'schema', s.nspowner FROM schema s
    UNION ALL
    SELECT 2, 'CREATE', a.grantee
    FROM schema s, pg_catalog.aclexplode(s.nspacl) a
    WHERE a.privilege_type = 'CREATE'
    UNION ALL
    SELECT 3, pg_catalog.pg_describe_object(o.classid, o.objid, 0), o.owner FROM objects o
)
SELECT f.rank, f.what, COALESCE(r.rolname::pg_catalog.text, 'PUBLIC')
FROM findings f LEFT JOIN pg_catalog.pg_roles r ON r.oid = f.role
WHERE r.rolsuper IS NOT TRUE
ORDER BY f.rank, f.what
