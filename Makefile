.PHONY: demo test test-fast test-spark lint bench report
PY := .venv/bin/python
LINTED := sbc_sql tests benchmarks examples setup.py

demo:
	python3 -m venv .venv && .venv/bin/pip install -q . && $(PY) examples/make_clinic_db.py --out clinic.duckdb --replace --visits visits.csv && .venv/bin/sbc-sql anonymize --db clinic.duckdb --table patients --k 5 --replace
# the whole suite from a fresh install, as CI runs it
test:
	python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/pip install -q --no-deps 'pycanon==1.3.6' && $(PY) -m pytest -q -n auto
# the development loop: no wheel build, no subprocess, no test longer than a few seconds
test-fast:
	$(PY) -m pytest -q -n auto -m "not slow"
# the Spark engine's tests (pyspark from the extra, and Java 17 or later)
test-spark:
	.venv/bin/pip install -q -e '.[spark]' && $(PY) -m pytest -q -m spark
lint:
	.venv/bin/ruff check $(LINTED) && .venv/bin/ruff format --check $(LINTED) && .venv/bin/mypy sbc_sql && .venv/bin/lint-imports --no-cache
# UCI Adult ships in benchmarks/data; writes benchmarks/results/*.json
bench:
	$(PY) benchmarks/paper_experiment.py && $(PY) benchmarks/bench_scale.py && $(PY) benchmarks/bench_scale.py --utility && $(PY) benchmarks/bench_utility.py && $(PY) benchmarks/report.py
# the benchmark tables of docs/metrics.md and benchmarks/README.md from benchmarks/results/*.json
report:
	$(PY) benchmarks/report.py
