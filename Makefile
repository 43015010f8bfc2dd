.PHONY: demo test bench lint
demo:
	python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/python examples/make_clinic_db.py --out clinic.duckdb --replace && .venv/bin/sbc-sql anonymize --db clinic.duckdb --table patients --k 5 --replace
test:
	python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/python -m pytest -q
bench:
	.venv/bin/python benchmarks/paper_experiment.py && .venv/bin/python benchmarks/bench_scale.py && .venv/bin/python benchmarks/bench_utility.py
lint:
	.venv/bin/python -m ruff check sbc_sql tests benchmarks examples  # pip install ruff
