{#- On dbt-postgres the package calls sbc-sql's SQL functions (sbc-sql install-sql), which
    run inside the server in the caller's session and transaction, with the caller's
    privileges. -#}

{#- the parameters of the SQL function sbc.<function>, as the database has it installed
    (none while dbt parses the project: no query runs then) -#}
{% macro postgres_parameters(function) -%}
  {%- if not execute -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set found = run_query(
      "select unnest(p.proargnames) from pg_catalog.pg_proc p join pg_catalog.pg_namespace n "
      ~ "on n.oid = p.pronamespace where n.nspname = 'sbc' and p.proname = "
      ~ sbc_sql.string_literal(function)) -%}
  {%- set names = found.columns[0].values() | list -%}
  {%- if not names -%}
    {{ exceptions.raise_compiler_error("sbc_sql: the SQL function sbc." ~ function ~ " is not installed in database '" ~ target.dbname ~ "'; install it with sbc-sql install-sql --db postgresql://...") }}
  {%- endif -%}
  {{ return(names) }}
{%- endmacro %}

{#- a value as the SQL function's argument: a literal of its type -#}
{% macro postgres_value(value, name) -%}
  {%- if value is none -%}
    null
  {%- elif value is boolean -%}
    {{ 'true' if value else 'false' }}
  {%- elif value is integer or value is float -%}
    {{ value }}
  {%- elif value is string -%}
    {{ sbc_sql.string_literal(value) }}
  {%- elif value is mapping -%}
    {#- weights: {'age': 2} is the text 'age=2' -#}
    {%- set pairs = [] -%}
    {%- for key, weight in value.items() -%}
      {%- if weight is not number or weight is boolean -%}
        {{ exceptions.raise_compiler_error("sbc_sql: " ~ name ~ " maps '" ~ key ~ "' to " ~ (weight | tojson) ~ ", not a number") }}
      {%- endif -%}
      {%- do pairs.append(key ~ '=' ~ weight) -%}
    {%- endfor -%}
    {{ sbc_sql.string_literal(pairs | join(',')) }}
  {%- elif value is sequence -%}
    {%- set items = [] -%}
    {%- for item in value -%}
      {%- do items.append(sbc_sql.string_literal(item)) -%}
    {%- endfor -%}
    ARRAY[{{ items | join(', ') }}]::text[]
  {%- else -%}
    {{ exceptions.raise_compiler_error("sbc_sql: " ~ name ~ " is " ~ (value | tojson) ~ ", which is no value an sbc-sql option takes") }}
  {%- endif -%}
{%- endmacro %}

{#- the named arguments `name => value` of a call of sbc.<function>: each name one of the
    installed function's parameters -#}
{% macro postgres_arguments(function, arguments) -%}
  {%- set parameters = sbc_sql.postgres_parameters(function) -%}
  {%- set written = [] -%}
  {%- for name, value in arguments.items() -%}
    {%- if execute and name not in parameters -%}
      {{ exceptions.raise_compiler_error("sbc_sql: '" ~ name ~ "' is not an argument of sbc." ~ function ~ "; give one of " ~ (parameters | join(', '))) }}
    {%- endif -%}
    {%- do written.append(name ~ ' => ' ~ sbc_sql.postgres_value(value, name)) -%}
  {%- endfor -%}
  {{ return(written | join(', ')) }}
{%- endmacro %}

{#- the arguments of sbc.anonymize for a model: its input, k, the release's name, replace,
    then its sbc config (drop named drop_columns, as the SQL function names it) -#}
{% macro postgres_anonymize_arguments(relation, options) -%}
  {%- set arguments = {
      'source': sbc_sql.table_name(relation, '__sbc_input'),
      'output': sbc_sql.table_name(relation),
      'replace': true} -%}
  {%- for name, value in options.items() -%}
    {%- if name in ('source', 'output', 'replace') -%}
      {{ exceptions.raise_compiler_error("sbc_sql: model '" ~ relation.identifier ~ "' gives " ~ name ~ ", which the sbc_release materialization decides; leave it out of its sbc config") }}
    {%- endif -%}
    {%- do arguments.update({('drop_columns' if name == 'drop' else name): value}) -%}
  {%- endfor -%}
  {{ return(sbc_sql.postgres_arguments('anonymize', arguments)) }}
{%- endmacro %}

{#- whether the build refreshes the model's release (incremental, built before, its ledger
    there, and no --full-refresh) rather than writing it anew; a config that no longer asks
    the k, roles or criteria the release keeps stops the build -#}
{% macro postgres_refreshes(relation, options) -%}
  {%- if not execute or not options.get('incremental') or should_full_refresh() -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set seen = adapter.get_relation(database=relation.database, schema=relation.schema,
                                      identifier=relation.identifier ~ '_seen') -%}
  {%- if seen is none -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set found = run_query("select pg_catalog.obj_description(pg_catalog.to_regclass("
      ~ sbc_sql.string_literal(sbc_sql.table_name(relation)) ~ "), 'pg_class')") -%}
  {%- set text = found.columns[0].values()[0] if found.rows | length else none -%}
  {%- if text is none or 'sbc-sql/provenance' not in text -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set doc = fromjson(text) -%}
  {%- if 'versions' not in doc -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set differs = [] -%}
  {%- if options.get('k') != doc.get('k') -%}
    {%- do differs.append('k') -%}
  {%- endif -%}
  {%- for role in ('qi', 'sensitive', 'drop', 'keep') -%}
    {%- if role in options -%}
      {%- set given = [options[role]] if options[role] is string else options[role] -%}
      {%- if (given | sort) != (doc.get('options', {}).get(role, []) | sort) -%}
        {%- do differs.append(role) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {#- the criteria a refresh keeps hold class by class: l-diversity and recursive
      (c,l)-diversity, each with its threshold (a refresh refuses the others) -#}
  {%- set kept = {} -%}
  {%- for record in doc.get('privacy_models', []) -%}
    {%- if record.get('name') == 'l-diversity' -%}
      {%- do kept.update({'l_diversity': record.get('l')}) -%}
    {%- elif record.get('name') == 'recursive-diversity' -%}
      {%- do kept.update({'recursive_l': record.get('l')}) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for option in ('l_diversity', 'recursive_l') -%}
    {%- if options.get(option) != kept.get(option) -%}
      {%- do differs.append(option) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if differs -%}
    {{ exceptions.raise_compiler_error("sbc_sql: model '" ~ relation.identifier ~ "' asks another " ~ (differs | join(', ')) ~ " than its incremental release keeps; build it anew with dbt build --full-refresh") }}
  {%- endif -%}
  {{ return(true) }}
{%- endmacro %}

{% materialization sbc_release, adapter='postgres' %}
  {%- set options = sbc_sql.model_options(config.get('sbc'), this.identifier) -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set input = sbc_sql.input_relation(this) -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#- in one transaction: the model's query as the input table, and its release over the
      last build's (sbc.anonymize writes in the caller's transaction) -#}
  {% call statement('sbc_input') -%}
    drop table if exists {{ input }}
  {%- endcall %}
  {% call statement('sbc_input_create') -%}
    create table {{ input }} as (
      {{ compiled_code }}
    )
  {%- endcall %}
  {% call statement('main', fetch_result=True) -%}
    {%- if sbc_sql.postgres_refreshes(this, options) %}
    select sbc.refresh({{ sbc_sql.postgres_arguments('refresh', {'release': sbc_sql.table_name(this)}) }})::text as summary
    {%- else %}
    select sbc.anonymize({{ sbc_sql.postgres_anonymize_arguments(this, options) }})::text as summary
    {%- endif %}
  {%- endcall %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

{#- the test's query: a row per problem sbc.verify finds -#}
{% macro postgres__sbc_verified_sql(original, release, options) -%}
  {%- set verify_parameters = sbc_sql.postgres_parameters('verify') -%}
  {%- set build_parameters = sbc_sql.postgres_parameters('anonymize') -%}
  {%- set arguments = {'original': original, 'release': release} -%}
  {%- for name, value in options.items() -%}
    {%- set name = 'identifier' if name == 'drop' else name -%}
    {#- what only the build takes (the algorithm, the leftovers, ...) is no question of verify's -#}
    {%- if name in verify_parameters or name not in build_parameters -%}
      {%- do arguments.update({name: value}) -%}
    {%- endif -%}
  {%- endfor -%}
  with verdict as (
    select sbc.verify({{ sbc_sql.postgres_arguments('verify', arguments) }}) as doc
  )
  select problem from verdict, jsonb_array_elements_text(doc -> 'problems') as problem
  union all
  select 'the release is not verified' as problem from verdict
  where not (doc ->> 'ok')::boolean and jsonb_array_length(doc -> 'problems') = 0
{%- endmacro %}
