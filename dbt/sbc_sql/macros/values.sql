{#- How the package writes values and names into SQL: every value a literal of its type
    (a string escaped as the adapter reads one), every name of a table quoted; a value of
    any other type is refused at compile time. -#}

{#- a string as a SQL literal -#}
{% macro string_literal(text) -%}
  {%- if text is not string -%}
    {{ exceptions.raise_compiler_error("sbc_sql: expected a string, got " ~ (text | tojson)) }}
  {%- endif -%}
  {{- adapter.dispatch('string_literal', 'sbc_sql')(text) -}}
{%- endmacro %}

{#- DuckDB reads no escape in a string: a quote is doubled -#}
{% macro default__string_literal(text) -%}
  '{{ text | replace("'", "''") }}'
{%- endmacro %}

{#- PostgreSQL: an escape string, whatever standard_conforming_strings says -#}
{% macro postgres__string_literal(text) -%}
  E'{{ text | replace("\\", "\\\\") | replace("'", "''") }}'
{%- endmacro %}

{#- a table's name as sbc-sql reads one ("schema"."name", a quote in a part doubled), so
    that a dot or a quote in a part stays in that part -#}
{% macro table_name(relation, suffix='') -%}
  "{{ relation.schema | replace('"', '""') }}"."{{ (relation.identifier ~ suffix) | replace('"', '""') }}"
{%- endmacro %}

{#- the relation holding a release's input: the model's query, as a table beside it -#}
{% macro input_relation(relation) -%}
  {{ return(api.Relation.create(database=relation.database, schema=relation.schema,
                                identifier=relation.identifier ~ '__sbc_input', type='table')) }}
{%- endmacro %}

{#- a model's sbc config: a mapping (k, roles, criteria, ...) -#}
{% macro model_options(options, identifier) -%}
  {%- if options is none -%}
    {{ exceptions.raise_compiler_error("sbc_sql: model '" ~ identifier ~ "' has no sbc config; give config(sbc={'k': 5, 'qi': ['age', 'zip']})") }}
  {%- endif -%}
  {%- if options is not mapping -%}
    {{ exceptions.raise_compiler_error("sbc_sql: the sbc config of model '" ~ identifier ~ "' is not a mapping; give config(sbc={'k': 5, 'qi': ['age', 'zip']})") }}
  {%- endif -%}
  {{ return(options) }}
{%- endmacro %}
