"""``job.read.jdbc``: a database table read through Spark's JDBC source, with bookmarks.

At run start the source opens one connection (:class:`sparkmark.engine.jdbc.JdbcConnection`: the
driver JVM's JDBC driver on classic sessions, a Python driver over Spark Connect), resolves the
table and its key columns from the database's metadata (the primary key when no
``bookmark_keys`` are given), reads the upper bound of the compound key once, and then
lets Spark read ``last < key <= upper`` — the range is a WHERE clause inside the ``dbtable``
subquery, so the database filters the rows (visible in the query plan and in the database's own
statement log).  Spark's schema query for that read runs on the same connection
(:mod:`sparkmark.sources.jdbcrelation`), so a run opens one driver-side connection, as plain
Spark's read does.  A large range is split into partitions on the first key when it is an integer,
decimal, date or timestamp.  The key range planning itself is pure: see
:mod:`sparkmark.planning.keyrange`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.engine.jdbc import (PYTHON_DRIVERS, JdbcConnection, TableRef, java_message, resolve_driver,
                        spark_url)
from sparkmark.planning import keyrange as kr
from sparkmark.core.redact import redact_url
from sparkmark.core.run import ReadMode, RunContext, SourceBookmark
from sparkmark.sources.jdbcrelation import load_on

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sparkmark.jdbc")

#: java.sql.Types -> key type
_INT_TYPES = {-6, 5, 4, -5}
_DECIMAL_TYPES = {2, 3}
_STRING_TYPES = {1, 12, -1, -15, -9, -16}
_DATE, _TIMESTAMP, _TIMESTAMP_TZ = 91, 93, 2014

#: options sparkmark uses itself (everything else goes to Spark's JDBC reader)
OWN_OPTIONS = ("numPartitions", "rowsPerPartition", "onKeysBehind")
#: Spark JDBC options that would fight the bookmark range
_REJECTED = ("dbtable", "query", "partitionColumn", "lowerBound", "upperBound", "predicates",
             "url")
DEFAULT_ROWS_PER_PARTITION = 1_000_000
DEFAULT_FETCHSIZE = "10000"


def read_jdbc(run: RunContext, url: str, table: str, transformation_ctx: str | None = None,
              bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
              properties: dict[str, Any] | None = None,
              options: dict[str, Any] | None = None) -> "DataFrame":
    """Rows of ``table`` past the last committed bookmark key (everything without a bookmark).

    Three steps, as the module docstring says: :func:`resolve` (I/O, one connection),
    the pure key-range plan (:mod:`sparkmark.planning.keyrange`), then Spark reads with
    :func:`reader_properties`.  Example: ``read_jdbc(job, url, "emp", "emp_src",
    bookmark_keys=["empno"], properties={"user": "etl"})``
    """
    run.add_secrets(properties, url if isinstance(url, str) else None)  # scrubbed from errors
    bm = run.bookmark(transformation_ctx)
    if not isinstance(url, str) or not url.startswith("jdbc:"):
        raise ConfigError(f"url must be a JDBC URL such as jdbc:postgresql://host:5432/db, "
                          f"not {redact_url(str(url))!r}")
    if not isinstance(table, str) or not table.strip():
        raise ConfigError("table must be a non-empty table name (optionally schema.table)")
    keyopts, rest = kr.resolve_key_options(bookmark_keys, sort_order, options)
    own, spark_opts = _split_options(rest)
    props = {str(k): str(v) for k, v in dict(properties or {}).items()}
    for k in props:
        if k.lower() in (r.lower() for r in _REJECTED):
            raise ConfigError(f"property {k!r} cannot be used with job.read.jdbc: the bookmark "
                              "decides the query and its partitions; pass the table as table=")
    driver = resolve_driver(run.spark, url, props)  # jdbc:mysql: MySQL's, else MariaDB's

    with JdbcConnection(run.spark, url, props, driver) as conn:
        src = resolve_on(conn, table, bm, keyopts, own, ctx=transformation_ctx)
        order = keyopts.sort_order
        plan, parts = src.plan, src.partitions
        where = None if plan.mode == kr.ALL else kr.render(plan.predicate(order), src.qcols,
                                                           src.types)
        dbtable = (src.table.quoted if where is None
                   else f"(SELECT * FROM {src.table.quoted} WHERE {where}) sm_range")
        predicates = ([kr.render(p, src.qcols, src.types) for p in parts.predicates]
                      if parts.count > 1 else None)
        reader_props = reader_properties(props, spark_opts, driver)
        # Spark's schema query on this connection: no second connection
        df = load_on(run.spark, conn.java_connection, spark_url(url), dbtable, predicates,
                     reader_props)
    if df is None:  # Spark's own read: it connects to learn the schema
        try:
            if predicates:
                df = run.spark.read.jdbc(spark_url(url), dbtable, predicates=predicates,
                                         properties=reader_props)
            else:
                df = run.spark.read.jdbc(spark_url(url), dbtable, properties=reader_props)
        except Exception as e:  # Spark resolves the schema here (a query with WHERE 1=0)
            raise SourceError(f"Spark cannot read table {src.table.display} from "
                              f"{redact_url(url)}: {java_message(e)}; check the table, the "
                              "options and the credentials") from None

    keys, types = src.keys, src.types
    info: dict[str, Any] = {
        "source": "jdbc", "table": src.table.display, "keys": list(keys), "sort_order": order,
        "mode": plan.mode, "new_input": plan.new_input,
        "lower": kr.encode_key(types, plan.after), "upper": kr.encode_key(types, plan.through),
        "partitions": parts.count, "driver": driver,
    }
    if parts.count > 1:
        info["partition_column"] = keys[0]
        info["partition_bounds"] = list(parts.bounds)
    if where is not None:
        info["where"] = where
    log.info("jdbc read of %s (ctx %s): mode=%s lower=%s upper=%s partitions=%d",
             src.table.display, transformation_ctx, plan.mode, info["lower"], info["upper"],
             parts.count)
    element = None
    if bm.mode is not ReadMode.ALL:
        element = kr.make_element(src.table.display, keys, types, order, plan.commit_last)
    run.record_read(transformation_ctx, element, info)
    return df


@dataclass(frozen=True)
class ResolvedSource:
    """What :func:`resolve` learned from the database: the table, its key columns (as the
    database spells them, quoted) and their key types, the read plan and its partitions."""

    table: TableRef
    keys: list[str]
    types: list[str]
    qcols: list[str]
    plan: kr.ReadPlan
    partitions: kr.PartitionPlan


def resolve(spark: Any, url: str, table: str, props: dict[str, str], driver: str,
            bm: SourceBookmark, keyopts: kr.KeyOptions, own: dict[str, Any], *,
            ctx: str | None) -> ResolvedSource:
    """The I/O step: one connection resolves the table and its keys, reads the upper bound
    once (incremental), and the first key's extent when partitions need it."""
    with JdbcConnection(spark, url, props, driver) as conn:
        return resolve_on(conn, table, bm, keyopts, own, ctx=ctx)


def resolve_on(conn: JdbcConnection, table: str, bm: SourceBookmark, keyopts: kr.KeyOptions,
               own: dict[str, Any], *, ctx: str | None) -> ResolvedSource:
    """:func:`resolve` on an open connection (``read_jdbc`` keeps it open for Spark's schema
    query).  Example: ``resolve_on(conn, "emp", bm, keyopts, own, ctx="emp_src")``"""
    order = keyopts.sort_order
    if bm.mode is ReadMode.INCREMENTAL:
        _ask_upper_ahead(conn, bm.previous, ctx=str(ctx))
    tref = conn.resolve_table(table)
    keys, types = _resolve_keys(conn, tref, keyopts.keys,
                                required=bm.mode is not ReadMode.ALL)
    qcols = [conn.quote(k) for k in keys] if keys else []
    if bm.mode is ReadMode.ALL:
        plan = kr.plan_read(kr.ALL, None, None)
    elif bm.mode is ReadMode.REPLAY:
        after = kr.read_element(bm.previous, str(ctx), keys, types, order,
                                "--job-bookmark-from run's")
        upto = kr.read_element(bm.upper, str(ctx), keys, types, order,
                               "--job-bookmark-to run's")
        plan = kr.plan_read(kr.REPLAY, after, upto)
    else:
        after = kr.read_element(bm.previous, str(ctx), keys, types, order)
        upper = _upper_bound(conn, tref, qcols, types, order, after,
                             on_behind=own["onKeysBehind"], ctx=str(ctx))
        plan = kr.plan_read(kr.INCREMENTAL, after, upper)
    parts = kr.PartitionPlan((), (kr.TRUE,))
    if keys and not plan.empty and types[0] in kr.PARTITIONABLE and own["numPartitions"] > 1:
        low, high = kr.first_key_span(plan, order)
        if low is None or high is None:
            lo_db, hi_db = _first_key_extent(conn, tref, qcols[0], types[0])
            low = lo_db if low is None else low
            high = hi_db if high is None else high
        parts = kr.plan_partitions(types[0], low, high, own["numPartitions"],
                                   own["rowsPerPartition"])
    return ResolvedSource(tref, list(keys), list(types), qcols, plan, parts)


def plan_pending(url: str, table: str, ctx: str, previous: Any, *,
                 bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
                 properties: dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None) -> ResolvedSource:
    """What an incremental run would read from ``table`` after the committed element
    ``previous`` (``None``: nothing committed yet), without Spark: the same key resolution and
    upper-bound query as :func:`read_jdbc`, through a Python driver (PostgreSQL with pg8000,
    MySQL/MariaDB with PyMySQL). Nothing is read or committed.

    Example: ``plan_pending(url, "emp", "emp_src", element).plan.new_input``
    """
    if not isinstance(url, str) or not url.lower().startswith(
            ("jdbc:postgresql:", "jdbc:mysql:", "jdbc:mariadb:")):
        raise SourceError(f"checking for new rows without Spark needs a Python driver, and "
                          f"sparkmark has one for {PYTHON_DRIVERS} only; "
                          f"{redact_url(str(url))} is neither: schedule the job itself (a run "
                          "with nothing new ends EMPTY)")
    if not isinstance(table, str) or not table.strip():
        raise ConfigError("table must be a non-empty table name (optionally schema.table)")
    keyopts, rest = kr.resolve_key_options(bookmark_keys, sort_order, options)
    own, _ = _split_options(rest)
    own["numPartitions"] = 1  # the check plans no partitions
    props = {str(k): str(v) for k, v in dict(properties or {}).items()}
    bm = SourceBookmark(ctx, ReadMode.INCREMENTAL, previous=previous)
    return resolve(None, url, table, props, "", bm, keyopts, own, ctx=ctx)


def reader_properties(props: dict[str, str], spark_opts: dict[str, Any],
                      driver: str) -> dict[str, str]:
    """Spark's JDBC reader properties: the connection properties, the pass-through options,
    the driver class, and a default ``fetchsize`` (pure)."""
    out = dict(props)
    out.update({k: str(v) for k, v in spark_opts.items()})
    out["driver"] = driver
    if not any(k.lower() == "fetchsize" for k in out):
        out["fetchsize"] = DEFAULT_FETCHSIZE
    return out


# ------------------------------------------------------------------------------ options
def _split_options(rest: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    own: dict[str, Any] = {"numPartitions": None, "rowsPerPartition": DEFAULT_ROWS_PER_PARTITION,
                           "onKeysBehind": "error"}
    spark_opts: dict[str, Any] = {}
    for name, value in rest.items():
        low = name.lower()
        if low in (r.lower() for r in _REJECTED):
            raise ConfigError(
                f"option {name!r} cannot be used with job.read.jdbc: the bookmark decides the "
                "query and its partitions (use numPartitions to cap the partitions)")
        canon = next((o for o in OWN_OPTIONS if o.lower() == low), None)
        if canon is None:
            spark_opts[name] = value
        elif canon == "onKeysBehind":
            v = str(value).strip().lower()
            if v not in ("error", "warn"):
                raise ConfigError(f"option onKeysBehind must be 'error' or 'warn', not {value!r}")
            own[canon] = v
        else:
            try:
                n = int(str(value).strip())
            except ValueError:
                n = 0
            if n < 1:
                raise ConfigError(f"option {canon} must be a positive integer, not {value!r}")
            own[canon] = n
    if own["numPartitions"] is None:
        own["numPartitions"] = 4
    return own, spark_opts


# ------------------------------------------------------------------------------ keys
def key_type(jdbc_type: int, type_name: str) -> str | None:
    """The bookmark key type of a column, ``None`` when it cannot be a key."""
    if jdbc_type in _INT_TYPES:
        return "int"
    if jdbc_type in _DECIMAL_TYPES:
        return "decimal"
    if jdbc_type in _STRING_TYPES:
        return "string"
    if jdbc_type == _DATE:
        return "date"
    if jdbc_type == _TIMESTAMP_TZ:
        return "timestamptz"
    if jdbc_type == _TIMESTAMP:
        low = type_name.lower()
        return "timestamptz" if ("tz" in low or "time zone" in low) else "timestamp"
    return None


def _resolve_keys(conn: JdbcConnection, tref: TableRef, wanted: tuple[str, ...] | None,
                  required: bool) -> tuple[list[str], list[str]]:
    """Key columns (names as the database spells them) and their key types."""
    by_name = {c[0]: c for c in tref.columns}
    if wanted is None:
        keys = conn.primary_key(tref)
        if not keys:
            if required:
                raise ConfigError(
                    f"table {tref.display} has no primary key and no bookmark_keys were given; "
                    "give bookmark_keys=[...] (or options jobBookmarkKeys) naming columns whose "
                    "values only grow for new rows")
            return [], []
        explicit = False
    else:
        keys = []
        for k in wanted:
            if k in by_name:
                keys.append(k)
                continue
            ci = [c for c in by_name if c.lower() == k.lower()]
            if len(ci) != 1:
                cols = ", ".join(by_name) or "none"
                raise ConfigError(f"bookmark key column {k!r} does not exist in table "
                                  f"{tref.display} (columns: {cols}); fix bookmark_keys")
            keys.append(ci[0])
        explicit = True
    types = []
    for k in keys:
        _, jtype, tname = by_name[k]
        t = key_type(jtype, tname)
        if t is None:
            if not required and not explicit:
                return [], []  # a primary key we cannot partition on: read it whole
            what = "bookmark key" if explicit else "primary key"
            raise ConfigError(
                f"{what} column {k!r} of {tref.display} has type {tname}, which cannot be a "
                "bookmark key; give bookmark_keys=[...] with integer, decimal, string, date or "
                "timestamp columns")
        types.append(t)
    return keys, types


def _upper_bound(conn: JdbcConnection, tref: TableRef, qcols: list[str], types: list[str],
                 order: str, last: tuple | None, on_behind: str, ctx: str) -> tuple | None:
    """The last key in ``order`` (max for asc, min for desc) among non-NULL keys, read once.

    With a previous ``last``, only keys at or after it are considered, so the answer is the
    database's own comparison (its collation); no row there while the table has keys means the
    new upper bound is behind ``last``.
    """
    def first(pred) -> list[str | None] | None:
        rows = conn.query(_first_key_sql(conn, tref.quoted, qcols, types, order, pred),
                          len(qcols))
        return rows[0] if rows else None

    nn = kr.not_null(len(qcols))
    row = first(_upper_predicate(last, order, len(qcols)))
    if row is None and last is not None:
        behind = first(nn)
        if behind is not None:
            shown = _decode(behind, types, tref)
            msg = (f"the bookmark keys of {tref.display} went backwards: the last key now is "
                   f"{list(shown)}, but transformation_ctx {ctx!r} already read up to "
                   f"{list(last)} ({order}). The keys are not monotonic, or rows were deleted "
                   "or the table reloaded.")
            if on_behind == "warn":
                log.warning("%s Keeping the bookmark; rows at or before it are not read "
                            "(onKeysBehind=warn).", msg)
                return None
            raise SourceError(msg + " Reset the job's bookmark (sparkmark bookmark reset JOB) to "
                              "read the table again, or set option onKeysBehind='warn' to keep "
                              "the bookmark and read only keys after it.")
    if row is None:
        return None
    upper = _decode(row, types, tref)
    if last is not None and _same_key(types, upper, last):
        return tuple(last)  # the same key, spelled another way (another driver or time zone)
    return upper


def _upper_predicate(last: tuple | None, order: str, n: int) -> Any:
    """The keys :func:`_upper_bound` looks among: non-NULL, at or after ``last``."""
    nn = kr.not_null(n)
    return kr.and_(nn, kr.lex_after(last, order, inclusive=True)) if last is not None else nn


def _first_key_sql(conn: JdbcConnection, quoted_table: str, qcols: list[str], types: list[str],
                   order: str, pred: Any) -> str:
    """The query for the last key in ``order`` among the rows ``pred`` selects."""
    direction = "DESC" if order == kr.ASC else "ASC"
    order_by = ", ".join(f"{c} {direction}" for c in qcols)
    return conn.limit_one(f"SELECT {', '.join(qcols)} FROM {quoted_table} WHERE "
                          f"{kr.render(pred, qcols, types)} ORDER BY {order_by}")


def _ask_upper_ahead(conn: JdbcConnection, element: Any, *, ctx: str) -> None:
    """The upper-bound query this run sends when its table and keys are still those of the
    committed ``element``, asked ahead (:meth:`JdbcConnection.ask_ahead`: with the catalog
    read, in its round trip). :func:`_upper_bound` builds its query from what the
    database says now; only exactly the same SQL is answered from this one."""
    if not isinstance(element, dict):
        return
    try:
        keys, types = list(element["keys"]), list(element["key_types"])
        order = element["sort_order"]
        last = kr.read_element(element, ctx, keys, types, order)
        schema, _, name = str(element["table"]).rpartition(".")
        quoted = ".".join(conn.quote(p) for p in (schema, name) if p)
        sql = _first_key_sql(conn, quoted, [conn.quote(k) for k in keys], types, order,
                             _upper_predicate(last, order, len(keys)))
    except Exception:  # noqa: BLE001 - an element this run cannot use: nothing asked ahead
        return
    conn.ask_ahead(sql, len(keys))


def _same_key(types: list[str], a: tuple, b: tuple) -> bool:
    try:
        return all(kr.python_value(t, x) == kr.python_value(t, y) for t, x, y in zip(types, a, b))
    except ValueError:
        return False


def _decode(row: list[str | None], types: list[str], tref: TableRef) -> tuple:
    try:
        return tuple(kr.canonical(t, v) for t, v in zip(types, row))
    except ValueError as e:
        raise SourceError(f"a key value of {tref.display} cannot be bookmarked: {e}; choose "
                          "other bookmark_keys") from None


def _first_key_extent(conn: JdbcConnection, tref: TableRef, qcol: str,
                      key_type_: str) -> tuple[Any, Any]:
    rows = conn.query(f"SELECT MIN({qcol}), MAX({qcol}) FROM {tref.quoted}", 2)
    if not rows or rows[0][0] is None or rows[0][1] is None:
        return None, None
    try:
        return kr.canonical(key_type_, rows[0][0]), kr.canonical(key_type_, rows[0][1])
    except ValueError:
        return None, None
