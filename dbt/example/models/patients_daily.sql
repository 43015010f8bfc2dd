-- the patients' incremental release: made once, then refreshed by every build with the rows
-- the patients table gained (no published class changes; --full-refresh makes it anew)
{{ config(
    materialized='sbc_release',
    sbc={
        'k': 5,
        'qi': ['age', 'zip', 'sex'],
        'sensitive': ['diagnosis'],
        'drop': ['patient_id'],
        'l_diversity': 3,
        'incremental': true,
    },
) }}

select * from {{ ref('patients') }}
