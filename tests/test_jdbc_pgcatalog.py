"""PostgreSQL's columns and primary key from one catalog query (the JDBC helper's
``pgTableColumns``, issue 26) against what PgJDBC's ``getColumns`` and ``getPrimaryKeys``
answer on the same connection: the same rows for tables of many column types (serial columns,
a domain, an enum, a composite type, arrays), a composite primary key declared out of column
order, a view, a partitioned table, names with LIKE wildcards, the same name in two schemas;
and the same table resolution and primary key through sparkmark's connection.  Where the query
cannot run (a connection that is not PgJDBC's) the link asks ``getColumns`` as before."""
from __future__ import annotations

import itertools
import os

import pytest
import sqlalchemy as sa

from sparkmark import Job
from sparkmark.engine.jdbc import JdbcConnection
from sparkmark.engine.jvm import decode_rows as _decode_rows
from sparkmark.core.options import ENABLE

from conftest import DERBY_DRIVER, need_derby, pg_jdbc_database

_counter = itertools.count()
PG_DRIVER = "org.postgresql.Driver"

DDL = [
    "CREATE TYPE mood AS ENUM ('sad', 'ok')",
    "CREATE TYPE pair AS (a int, b text)",
    "CREATE DOMAIN posint AS integer CHECK (VALUE > 0)",
    "CREATE SCHEMA other",
    "CREATE TABLE wide (id bigserial PRIMARY KEY, sm smallserial, se serial, s smallint, "
    "i integer DEFAULT 7, n numeric(10,2), nu numeric, r real, d double precision, b boolean, "
    "t text, v varchar(20), ch char(3), dt date, tm time, ts timestamp, tz timestamptz, "
    "by bytea, u uuid, j json, jb jsonb, arr integer[], tarr text[], m mood, p pair, "
    "pi posint, iv interval, \"Mixed Case\" text)",
    "CREATE TABLE multi (region text, seq integer, day date, note text, "
    "PRIMARY KEY (day, region))",
    "ALTER TABLE multi DROP COLUMN note",
    "ALTER TABLE multi ADD COLUMN later bigint",
    "CREATE VIEW wide_v AS SELECT id, t FROM wide",
    "CREATE TABLE parted (id bigint, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k)",
    "CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10)",
    "CREATE TABLE a_b (x int PRIMARY KEY)",
    "CREATE TABLE axb (y int)",
    "CREATE TABLE other.a_b (z text PRIMARY KEY, w int)",
    "CREATE TABLE \"CamelT\" (\"Id\" int PRIMARY KEY)",
    "CREATE TABLE nokey (a int, b text)",
    "CREATE DOMAIN nnint AS integer NOT NULL",
    "CREATE TABLE ident (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
    "s serial, q nnint, r posint NOT NULL, t text DEFAULT 'x', u integer NOT NULL)",
]


@pytest.fixture
def pg(spark, pg_server):
    """A JDBC URL of a fresh PostgreSQL database holding the tables of ``DDL``."""
    engine, url = pg_jdbc_database(spark, pg_server, "pgcat", DDL)
    yield engine, url
    engine.dispose()


def _helper(spark):
    from sparkmark.engine.jdbc.jvmlink import _jvm_helper
    helper = _jvm_helper(spark)
    assert helper is not None, "the JDBC helper class is not loadable"
    return helper


#: (schema pattern, table pattern) as the link passes them to getColumns
PATTERNS = [(None, "wide"), ("public", "wide"), (None, "multi"), (None, "wide\\_v"),
            (None, "parted"), (None, "parted\\_1"), (None, "a\\_b"), (None, "a_b"),
            ("other", "a\\_b"), (None, "CamelT"), (None, "camelt"), (None, "nokey"),
            (None, "no_such_table"), ("nope", "wide"), (None, "%"), ("", "multi"),
            (None, "ident")]


@pytest.mark.parametrize("schema,name", PATTERNS)
def test_one_query_answers_what_getcolumns_and_getprimarykeys_answer(spark, pg, schema, name):
    _, url = pg
    helper = _helper(spark)
    with JdbcConnection(spark, url, {}, PG_DRIVER) as conn:
        jconn = conn.java_connection
        ours = _decode_rows(helper.pgTableColumns(jconn, schema, name))
        theirs = _decode_rows(helper.tableColumnsOf(jconn, schema, name))
        if name == "%":  # every table of the database: the catalogs' own included
            ours = [r for r in ours if r[1] in ("public", "other")]
            theirs = [r for r in theirs if r[1] in ("public", "other")]
        assert [r[:6] for r in ours] == theirs
        for table in {(r[1], r[2]) for r in ours}:
            pk = sorted((int(str(r[6])), r[3]) for r in ours
                        if (r[1], r[2]) == table and r[6] is not None)
            want = _decode_rows(helper.primaryKeyOf(jconn, None, table[0], table[1]))
            assert pk == sorted((int(str(s)), c) for s, c in want), table
    if (schema, name) == (None, "wide"):
        types = {r[3]: (r[4], r[5]) for r in ours}
        assert types["id"] == ("-5", "bigserial") and types["se"] == ("4", "serial")
        assert types["sm"] == ("5", "smallserial") and types["i"] == ("4", "int4")
        assert types["m"][0] == "12" and types["p"][0] == "2002" and types["pi"][0] == "2001"
        assert types["arr"] == ("2003", "_int4") and "Mixed Case" in types
    if (schema, name) == (None, "multi"):
        assert [r[3] for r in ours] == ["region", "seq", "day", "later"]  # no dropped column
        assert [r[6] for r in ours] == ["2", None, "1", None]


def test_the_connection_resolves_tables_and_keys_as_before(spark, pg):
    """Through sparkmark's connection: the table, its columns and its primary key (the
    primary key now without a second metadata query) equal getColumns/getPrimaryKeys'."""
    _, url = pg
    helper = _helper(spark)
    with JdbcConnection(spark, url, {}, PG_DRIVER) as conn:
        jconn = conn.java_connection
        for table, pk in (("wide", ["id"]), ("multi", ["day", "region"]),
                          ("public.a_b", ["x"]), ("other.a_b", ["z"]), ("camelt", ["Id"]),
                          ("parted", ["id", "k"]), ("nokey", []), ("wide_v", [])):
            tref = conn.resolve_table(table)
            if table != "camelt":  # spelled as stored: one query learnt columns and key
                assert (tref.catalog, tref.schema, tref.name) in conn._link._keys, table
            cols = _decode_rows(helper.tableColumnsOf(jconn, tref.schema, tref.name))
            assert list(tref.columns) == [(c[3], int(str(c[4])), c[5]) for c in cols
                                          if c[2] == tref.name], table
            assert conn.primary_key(tref) == pk, table
            want = _decode_rows(helper.primaryKeyOf(jconn, None, tref.schema, tref.name))
            assert pk == [c for _, c in sorted((int(str(s)), c) for s, c in want)], table
        with pytest.raises(Exception, match="exists in several schemas|does not exist"):
            conn.resolve_table("A_B_missing")


def test_a_job_reads_by_the_primary_key_the_query_found(spark, pg, tmp_path):
    engine, url = pg
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO multi (region, seq, day) SELECT 'r' || (g % 3), g, "
                          "DATE '2024-01-01' + g FROM generate_series(1, 30) g"))
    state = f"sqlite:///{tmp_path}/state.db"
    runs = []
    for extra in (0, 5):
        if extra:
            with engine.begin() as c:
                c.execute(sa.text("INSERT INTO multi (region, seq, day) SELECT 'r0', g, "
                                  "DATE '2024-03-01' + g FROM generate_series(1, :n) g"),
                          {"n": extra})
        job = Job(spark, state=state)
        job.init("pgcat_multi", {"job_bookmark_option": ENABLE})
        df = job.read.jdbc(url, table="multi", transformation_ctx="src")
        runs.append(sorted(r["seq"] for r in df.collect()))
        job.commit()
    assert runs == [list(range(1, 31)), [1, 2, 3, 4, 5]]
    info = Job(spark, state=state).store.list_runs(job_name="pgcat_multi")[-1]
    assert '"keys": ["day", "region"]' in info["config"]


def test_a_connection_that_is_not_pgjdbcs_is_asked_by_getcolumns(spark):
    """The query needs PgJDBC's connection; on another driver's (Derby here, taken for
    PostgreSQL by force) it fails and the link answers by getColumns/getPrimaryKeys."""
    need_derby(spark)
    url = f"jdbc:derby:memory:pgcat{os.getpid()}_{next(_counter)};create=true"
    with JdbcConnection(spark, url, {}, DERBY_DRIVER) as conn:
        st = conn.java_connection.createStatement()
        st.execute("CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME VARCHAR(20))")
        st.close()
        with pytest.raises(Exception, match="getTypeInfo"):
            _helper(spark).pgTableColumns(conn.java_connection, None, "T")
        link = conn._link
        link.product = "PostgreSQL"
        found = link.table_columns(None, "T")
        assert [c[0] for cols in found.values() for c in cols] == ["ID", "NAME"]
        (key,) = found
        assert link.primary_key(*key) == ["ID"]


#: what PgJDBC's ResultSetMetaData answers from its own catalog query (FieldMetadata)
_RSMD = ("getColumnName", "getColumnTypeName", "isNullable", "isAutoIncrement",
         "getBaseColumnName", "getBaseTableName", "getBaseSchemaName")


def _rsmd(jconn, quoted: str) -> list[tuple]:
    st = jconn.createStatement()
    try:
        md = st.executeQuery(f"SELECT * FROM {quoted} WHERE 1=0").getMetaData()
        return [tuple(getattr(md, m)(i) for m in _RSMD)
                for i in range(1, md.getColumnCount() + 1)]
    finally:
        st.close()


def _backend_pid(jconn) -> int:
    st = jconn.createStatement()
    try:
        rs = st.executeQuery("SELECT pg_backend_pid()")
        rs.next()
        return int(rs.getInt(1))
    finally:
        st.close()


@pytest.mark.parametrize("schema,name,quoted", [
    ("public", "wide", '"wide"'), ("public", "ident", '"ident"'), ("public", "multi", '"multi"'),
    ("public", "wide_v", '"wide_v"'), ("public", "parted", '"parted"'),
    ("other", "a\\_b", '"other"."a_b"'), ("public", "CamelT", '"CamelT"'),
    ("public", "nokey", '"nokey"')])
def test_pgjdbc_answers_its_column_metadata_from_the_rows_the_query_shared(
        spark, pg, pg_server, schema, name, quoted):
    """pgTableColumns puts what it read into PgJDBC's field metadata cache (issue 26: Spark's
    schema query made PgJDBC read the same catalog rows again). On that connection PgJDBC's
    ResultSetMetaData answers exactly what it answers on a fresh one from its own query
    (names, base table and schema, nullability of NOT NULL columns and NOT NULL domains,
    auto-increment of identity and serial columns, hence the serial type names), and it no
    longer sends that query (the server's statement log of the connection's backend)."""
    _, url = pg
    helper = _helper(spark)
    with JdbcConnection(spark, url, {}, PG_DRIVER) as fresh:
        want = _rsmd(fresh.java_connection, quoted)
    with JdbcConnection(spark, url, {}, PG_DRIVER) as conn:
        jconn = conn.java_connection
        pid = _backend_pid(jconn)
        helper.pgTableColumns(jconn, schema, name)
        got = _rsmd(jconn, quoted)
    assert got == want
    if name == "ident":
        by = {c[0]: c for c in got}
        assert by["id"][3] and by["s"][1] == "serial" and by["s"][3]  # identity, serial
        assert by["q"][2] == 0 and by["r"][2] == 0 and by["u"][2] == 0  # columnNoNulls
        assert by["t"][2] == 1 and not by["t"][3]  # nullable, a default but no sequence
    log = (pg_server.root / "log").read_text(errors="replace")
    mine = [line for line in log.splitlines() if f"[{pid}]" in line]
    assert any("SELECT * FROM" in line for line in mine), "the statement log has no entry"
    assert not any("a.attnotnull OR (t.typtype" in line for line in mine)


def test_a_query_asked_ahead_is_answered_once_from_the_catalog_round_trip(spark, pg):
    """ask_ahead sends a query with the next catalog read (pgTableColumnsThen, issue 26):
    exactly that SQL is answered from it, once (a row inserted after the catalog read is not in
    that answer, and the next ask sees it); another SQL, and one that failed ahead, are asked
    when asked, with the usual error."""
    from sparkmark.core.errors import SourceError
    engine, url = pg
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO other.a_b (z, w) VALUES ('a', 1), ('c', 3)"))
    top = ('SELECT "z" FROM "other"."a_b" WHERE "z" IS NOT NULL ORDER BY "z" DESC '
           "OFFSET 0 ROWS FETCH NEXT 1 ROWS ONLY")
    with JdbcConnection(spark, url, {}, PG_DRIVER) as conn:
        conn.ask_ahead(top, 1)
        assert conn.resolve_table("other.a_b").columns[0][0] == "z"
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO other.a_b (z, w) VALUES ('d', 4)"))
        assert conn.query(top.replace("DESC", "ASC"), 1) == [["a"]]  # not the SQL asked ahead
        assert conn.query(top, 1) == [["c"]]  # answered with the catalog read, before 'd'
        assert conn.query(top, 1) == [["d"]]  # once: asked again, the database answers
        bad = 'SELECT "nope" FROM "other"."a_b"'
        conn.ask_ahead(bad, 1)
        assert conn.resolve_table("public.a_b").name == "a_b"  # the catalog read still works
        with pytest.raises(SourceError, match='query on .* failed: .*"nope"'):
            conn.query(bad, 1)


@pytest.mark.parametrize("table,keys,order,insert", [
    ("multi", None, "asc", "INSERT INTO multi (region, seq, day) SELECT 'r' || g, g, "
                           "DATE '2024-01-01' + :base + g FROM generate_series(1, 3) g"),
    ("other.a_b", None, "asc", "INSERT INTO other.a_b (z, w) SELECT 'k' || "
                               "lpad((:base + g)::text, 4, '0'), g FROM generate_series(1, 3) g"),
    ("camelt", None, "asc", 'INSERT INTO "CamelT" ("Id") SELECT :base + g '
                            "FROM generate_series(1, 3) g"),
    ("nokey", ["a"], "desc", "INSERT INTO nokey (a, b) SELECT 1000 - :base - g, 'x' "
                             "FROM generate_series(1, 3) g")])
def test_an_incremental_run_asks_its_upper_bound_with_the_catalog_read(
        spark, pg, tmp_path, monkeypatch, table, keys, order, insert):
    """From its second run, a job's upper-bound query is the committed bookmark's and rides
    with the catalog read (one py4j round trip less, issue 26): for a compound key, another
    schema, a quoted mixed-case name and a descending key; each run reads just its new rows."""
    import sparkmark.engine.jdbc.jvmlink as jc
    engine, url = pg
    answered: list[bool] = []
    real_query = jc._JvmLink.query

    def spy(self, sql, columns=None):
        answered.append((sql, -1 if columns is None else columns) in self._answers)
        return real_query(self, sql, columns)
    monkeypatch.setattr(jc._JvmLink, "query", spy)
    state = f"sqlite:///{tmp_path}/state.db"
    counts = []
    for base in (0, 10, 20):
        with engine.begin() as c:
            c.execute(sa.text(insert), {"base": base})
        answered.clear()
        job = Job(spark, state=state).init("ahead", {"job_bookmark_option": ENABLE})
        df = job.read.jdbc(url, table=table, transformation_ctx="src", bookmark_keys=keys,
                           sort_order=order)
        counts.append(df.count())
        job.commit()
        # the first run has no bookmark to ask ahead from (and asks the key's extent too)
        assert (answered[:1] == [True]) if base else not any(answered), (base, answered)
    assert counts == [3, 3, 3]
