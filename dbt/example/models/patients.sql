-- generated patients (600 unless the var patients says how many: a table that grows, for
-- the incremental release): an identifier, three quasi-identifiers and a diagnosis (the
-- same SQL on DuckDB and PostgreSQL; patient i is the same in every build)
{{ config(materialized='table') }}

select
    i as patient_id,
    18 + (i * 37) % 70 as age,
    cast(10000 + (i * 13) % 40 as varchar) as zip,
    case when i % 2 = 0 then 'F' else 'M' end as sex,
    case i % 5
        when 0 then 'flu'
        when 1 then 'asthma'
        when 2 then 'diabetes'
        when 3 then 'migraine'
        else 'fracture'
    end as diagnosis
from generate_series(1, {{ var('patients', 600) }}) as s(i)
