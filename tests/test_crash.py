"""The crash harness, small: SIGKILL a real job at random moments, then check exactly-once.

The full version is `python benchmarks/crash.py --trials 300 [--sink jdbc]`.
CI runs a seeded few: 6 trials against a parquet target, 5 against a PostgreSQL table and 3
against a parquet target on S3 (moto; publish by copy, kills inside it included)
(SPARKMARK_CRASH_TRIALS / SPARKMARK_CRASH_JDBC_TRIALS / SPARKMARK_CRASH_S3_TRIALS change that).
The Iceberg target's trials (``--sink iceberg``, Spark 3.5) run in tests/test_iceberg_target.py.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("crash", ROOT / "benchmarks" / "crash.py")
crash = importlib.util.module_from_spec(spec)
spec.loader.exec_module(crash)


@pytest.mark.slow
@pytest.mark.parametrize("sink, trials", [
    ("files", int(os.environ.get("SPARKMARK_CRASH_TRIALS", "6"))),
    ("jdbc", int(os.environ.get("SPARKMARK_CRASH_JDBC_TRIALS", "5"))),
    ("s3", int(os.environ.get("SPARKMARK_CRASH_S3_TRIALS", "3"))),
])
def test_random_sigkills_never_lose_or_duplicate(tmp_path, sink, trials, request):
    if sink == "s3":
        request.getfixturevalue("s3_server")  # skips (or fails in CI) without the s3a jars
    if sink == "jdbc" and not os.path.exists("/usr/share/java/postgresql.jar"):
        pytest.skip("PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java")
    report = crash.run_trials(trials, sink, seed=1234 + trials, workdir=tmp_path,
                              log=lambda *_: None)
    assert report["killed"] > 0, report  # the harness really interrupted runs
    assert report["source_records"] > 0
    assert report["duplicates"] == 0 and report["missing"] == 0, report
    assert report["unexpected"] == 0 and not report["staging_left"], report
    assert report["last_run"]["status"] == "EMPTY", report  # the bookmark agrees
    assert report["exactly_once"], report
