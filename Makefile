# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test bench

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

install: $(BIN)/.installed

# The main job: local Spark, SQLite state, files in ./sparkmark-demo
demo: install
	$(BIN)/sparkmark demo

# The whole test suite (real Spark, real SQLite, a real PostgreSQL server, real JDBC drivers)
test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: install
	$(BIN)/python benchmarks/lifecycle.py
