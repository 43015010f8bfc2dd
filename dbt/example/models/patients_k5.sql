-- the patients' release: every class of at least 5 rows on age, zip and sex, each with at
-- least 3 distinct diagnoses; the identifier dropped
{{ config(
    materialized='sbc_release',
    sbc={
        'k': 5,
        'qi': ['age', 'zip', 'sex'],
        'sensitive': ['diagnosis'],
        'drop': ['patient_id'],
        'l_diversity': 3,
    },
) }}

select * from {{ ref('patients') }}
