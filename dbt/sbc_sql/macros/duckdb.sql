{#- On dbt-duckdb the package runs sbc-sql in the dbt process: the materialization hands
    the model to sbc_sql.dbt_duckdb.build as a Python job on a cursor of the database, and
    the test calls the function sbc_verify, which the plugin sbc_sql.dbt_duckdb registers
    (the profile names it). -#}

{% materialization sbc_release, adapter='duckdb' %}
  {%- set options = sbc_sql.model_options(config.get('sbc'), this.identifier) -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set payload = {
      'sql': compiled_code,
      'database': this.database,
      'schema': this.schema,
      'identifier': this.identifier,
      'options': options,
      'full_refresh': should_full_refresh()} -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {#- the build runs on a cursor of its own, which sees what is committed: the pre-hooks'
      work first -#}
  {% call statement('sbc_before') -%} select 1 {%- endcall %}
  {{ adapter.commit() }}

  {#- the payload goes in as one JSON text, read back by json.loads: no value of it is
      written into the code -#}
  {% call statement('main', language='python') -%}
import json


def model(dbt, session):
    from sbc_sql import dbt_duckdb

    dbt_duckdb.build(session, json.loads({{ payload | tojson | tojson }}))


class dbtObj:
    def __init__(self, load_df_function):
        pass


def materialize(df, con):
    pass
  {%- endcall %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% call statement('sbc_after') -%} select 1 {%- endcall %}
  {{ adapter.commit() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

{#- the test's query: a row per problem sbc_verify finds (sbc_sql.dbt_duckdb.verify_json
    leaves out what only the build takes) -#}
{% macro duckdb__sbc_verified_sql(original, release, options) -%}
  {%- set asked = {} -%}
  {%- for name, value in options.items() -%}
    {%- do asked.update({('identifier' if name == 'drop' else name): value}) -%}
  {%- endfor -%}
  with verdict as (
    select sbc_verify({{ sbc_sql.string_literal(original) }}, {{ sbc_sql.string_literal(release) }},
                      {{ sbc_sql.string_literal(asked | tojson) }})::JSON as doc
  )
  select unnest(from_json(doc -> 'problems', '["VARCHAR"]')) as problem from verdict
  union all
  select 'the release is not verified' as problem from verdict
  where not (doc ->> 'ok')::BOOLEAN and json_array_length(doc -> 'problems') = 0
{%- endmacro %}
