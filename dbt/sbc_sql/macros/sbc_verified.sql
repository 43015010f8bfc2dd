{#- The generic test sbc_verified: the release a model built (its relation, the view sbc-sql
    wrote) verified by sbc-sql against the model's input, as sbc-sql verify does: k, every
    criterion, the roles, every class against the source's values, completeness and the
    provenance. It asks what the model's sbc config asked (k, the criteria, the roles,
    max_suppression), and what the test gives besides or instead (k, l_diversity, ...,
    original: another relation to verify against). Each problem is a failing row. -#}

{% test sbc_verified(model, original=none) %}
  {%- set asked = {} -%}
  {%- do asked.update(sbc_sql.tested_model_options(model)) -%}
  {%- do asked.update(kwargs) -%}
  {%- if original is none -%}
    {%- set against = sbc_sql.table_name(sbc_sql.input_relation(model)) -%}
  {%- elif original is string -%}
    {%- set against = original -%}
  {%- else -%}
    {%- set against = sbc_sql.table_name(original) -%}
  {%- endif -%}
  {%- if execute and 'k' not in asked -%}
    {{ exceptions.raise_compiler_error("sbc_sql: sbc_verified on '" ~ model.identifier ~ "' has no k: the model is not an sbc_release with one, so give the test k") }}
  {%- endif -%}
  {{ adapter.dispatch('sbc_verified_sql', 'sbc_sql')(
       against, sbc_sql.table_name(model), asked) }}
{% endtest %}

{#- the sbc config of the sbc_release model whose relation is `relation` (none: none) -#}
{% macro tested_model_options(relation) -%}
  {%- set found = namespace(options={}) -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() -%}
      {%- if node.resource_type == 'model' and node.config.materialized == 'sbc_release'
            and node.alias == relation.identifier and node.schema == relation.schema
            and node.database == relation.database -%}
        {%- set found.options = node.config.get('sbc') or {} -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(found.options) }}
{%- endmacro %}

{% macro default__sbc_verified_sql(original, release, options) -%}
  {{ exceptions.raise_compiler_error("sbc_sql: sbc_verified runs on dbt-duckdb and dbt-postgres, not on " ~ adapter.type()) }}
{%- endmacro %}
