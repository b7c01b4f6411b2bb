"""``job.read.jdbc``: a database table read through Spark's JDBC source, with bookmarks (SPEC §4).

At run start the source opens one JDBC connection from the driver JVM (the same driver jar Spark
uses), resolves the table and its key columns from ``java.sql.DatabaseMetaData`` (the primary
key when no ``bookmark_keys`` are given), reads the upper bound of the compound key once, and then
lets Spark read ``last < key <= upper`` — the range is a WHERE clause inside the ``dbtable``
subquery, so the database filters the rows (visible in the query plan and in the database's own
statement log).  A large range is split into partitions on the first key when it is an integer,
decimal, date or timestamp.  The key range planning itself is pure: see
:mod:`sparkmark.planning.keyrange`.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError, SourceError
from ..planning import keyrange as kr

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..job import Job

log = logging.getLogger("sparkmark.jdbc")

#: driver classes for common URL prefixes (used when ``properties`` has no ``driver``)
DRIVERS = (
    ("jdbc:postgresql:", "org.postgresql.Driver", "libpostgresql-jdbc-java"),
    ("jdbc:derby://", "org.apache.derby.jdbc.ClientDriver", None),
    ("jdbc:derby:", "org.apache.derby.jdbc.EmbeddedDriver", None),
    ("jdbc:mysql:", "com.mysql.cj.jdbc.Driver", None),
    ("jdbc:mariadb:", "org.mariadb.jdbc.Driver", "libmariadb-java"),
    ("jdbc:sqlite:", "org.sqlite.JDBC", "libxerial-sqlite-jdbc-java"),
    ("jdbc:sqlserver:", "com.microsoft.sqlserver.jdbc.SQLServerDriver", None),
    ("jdbc:oracle:", "oracle.jdbc.OracleDriver", None),
    ("jdbc:h2:", "org.h2.Driver", None),
    ("jdbc:db2:", "com.ibm.db2.jcc.DB2Driver", None),
)

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
#: Spark JDBC reader options (not handed to the driver for the metadata connection)
_SPARK_ONLY = {"driver", "fetchsize", "querytimeout", "sessioninitstatement", "customschema",
               "pushdownpredicate", "pushdownaggregate", "pushdownlimit", "pushdownoffset",
               "pushdowntablesample", "preparequery", "keytab", "principal",
               "refreshkrb5config", "connectionprovider", "preferTimestampNTZ".lower(),
               "batchsize", "isolationlevel", "numpartitions"}

DEFAULT_ROWS_PER_PARTITION = 1_000_000
DEFAULT_FETCHSIZE = "10000"


def read_jdbc(job: "Job", url: str, table: str, transformation_ctx: str | None = None,
              bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
              properties: dict[str, Any] | None = None,
              options: dict[str, Any] | None = None) -> "DataFrame":
    """Rows of ``table`` past the last committed bookmark key (everything without a bookmark)."""
    job.secrets.add_properties(properties)
    job.secrets.add_url(url if isinstance(url, str) else None)
    bm = job._bookmark_for(transformation_ctx)
    if not isinstance(url, str) or not url.startswith("jdbc:"):
        raise ConfigError(f"url must be a JDBC URL such as jdbc:postgresql://host:5432/db, "
                          f"not {_redact(str(url))!r}")
    if not isinstance(table, str) or not table.strip():
        raise ConfigError("table must be a non-empty table name (optionally schema.table)")
    keyopts, rest = kr.resolve_key_options(bookmark_keys, sort_order, options)
    own, spark_opts = _split_options(rest)
    props = {str(k): str(v) for k, v in dict(properties or {}).items()}
    for k in props:
        if k.lower() in (r.lower() for r in _REJECTED):
            raise ConfigError(f"property {k!r} cannot be used with job.read.jdbc: the bookmark "
                              "decides the query and its partitions; pass the table as table=")
    driver = props.get("driver") or _driver_for(url)
    order = keyopts.sort_order
    spark = job.spark

    replay = bm is not None and job.args is not None and job.args.from_run is not None
    mode = kr.ALL if bm is None else (kr.REPLAY if replay else kr.INCREMENTAL)

    with _Connection(spark, url, props, driver) as conn:
        tref = conn.resolve_table(table)
        keys, types = _resolve_keys(conn, tref, keyopts.keys, required=bm is not None)
        qcols = [conn.quote(k) for k in keys] if keys else []
        ctx = transformation_ctx
        if mode == kr.ALL:
            plan = kr.plan_read(kr.ALL, None, None)
        elif mode == kr.REPLAY:
            after = kr.read_element(bm.previous, ctx, keys, types, order,
                                    "--job-bookmark-from run's")
            upto = kr.read_element(bm.upper, ctx, keys, types, order,
                                   "--job-bookmark-to run's")
            plan = kr.plan_read(kr.REPLAY, after, upto)
        else:
            after = kr.read_element(bm.previous, ctx, keys, types, order)
            upper = _upper_bound(conn, tref, qcols, types, order, after,
                                 on_behind=own["onKeysBehind"], ctx=ctx)
            plan = kr.plan_read(kr.INCREMENTAL, after, upper)
        where = None if plan.mode == kr.ALL else kr.render(plan.predicate(order), qcols, types)
        parts = kr.PartitionPlan((), (kr.TRUE,))
        if keys and not plan.empty and types[0] in kr.PARTITIONABLE and own["numPartitions"] > 1:
            low, high = kr.first_key_span(plan, order)
            if low is None or high is None:
                lo_db, hi_db = _first_key_extent(conn, tref, qcols[0], types[0])
                low = lo_db if low is None else low
                high = hi_db if high is None else high
            parts = kr.plan_partitions(types[0], low, high, own["numPartitions"],
                                       own["rowsPerPartition"])

    dbtable = (tref.quoted if where is None
               else f"(SELECT * FROM {tref.quoted} WHERE {where}) sm_range")
    reader_props = dict(props)
    reader_props.update({k: str(v) for k, v in spark_opts.items()})
    reader_props["driver"] = driver
    if not any(k.lower() == "fetchsize" for k in reader_props):
        reader_props["fetchsize"] = DEFAULT_FETCHSIZE
    predicates = ([kr.render(p, qcols, types) for p in parts.predicates]
                  if parts.count > 1 else None)
    try:
        df = spark.read.jdbc(url, dbtable, predicates=predicates, properties=reader_props)
    except Exception as e:  # Spark resolves the schema here (a query with WHERE 1=0)
        raise SourceError(f"Spark cannot read table {tref.display} from {_redact(url)}: "
                          f"{_java_message(e)}; check the table, the options and the "
                          f"credentials") from None

    info: dict[str, Any] = {
        "source": "jdbc", "table": tref.display, "keys": list(keys or []), "sort_order": order,
        "mode": plan.mode, "new_input": plan.new_input,
        "lower": kr.encode_key(types, plan.after), "upper": kr.encode_key(types, plan.through),
        "partitions": parts.count,
    }
    if parts.count > 1:
        info["partition_column"] = keys[0]
        info["partition_bounds"] = list(parts.bounds)
    if where is not None:
        info["where"] = where
    log.info("jdbc read of %s (ctx %s): mode=%s lower=%s upper=%s partitions=%d",
             tref.display, transformation_ctx, plan.mode, info["lower"], info["upper"],
             parts.count)
    if bm is None:
        job._note_source(transformation_ctx, info)
    else:
        element = kr.make_element(tref.display, keys, types, order, plan.commit_last)
        job._stage_state(transformation_ctx, element, info)
    return df


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


def _driver_for(url: str) -> str:
    for prefix, cls, _ in DRIVERS:
        if url.lower().startswith(prefix):
            return cls
    raise ConfigError(f"no known JDBC driver for {_redact(url)}; give the driver class as "
                      "properties={'driver': '...'} and put its jar on spark.jars")


def _apt_hint(driver: str) -> str:
    for _, cls, pkg in DRIVERS:
        if cls == driver and pkg:
            return f" (Debian/Ubuntu: apt-get install {pkg})"
    return ""


def _redact(url: str) -> str:
    from ..secrets import mask_url
    return mask_url(url)


def _java_message(e: BaseException) -> str:
    je = getattr(e, "java_exception", None)
    if je is not None:
        try:
            msg = je.getMessage() or je.toString()
            return str(msg).strip().splitlines()[0]
        except Exception:
            pass
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


# ------------------------------------------------------------------------------ JVM side
@dataclass(frozen=True)
class TableRef:
    catalog: str | None
    schema: str | None
    name: str
    quoted: str
    columns: tuple[tuple[str, int, str], ...]  # (name, java.sql.Types, type name)

    @property
    def display(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


class _Connection:
    """One JDBC connection on the driver JVM, through the driver class Spark also uses."""

    def __init__(self, spark, url: str, props: dict[str, str], driver: str):
        self._spark, self._url, self._props, self._driver = spark, url, props, driver
        self._conn = None

    def __enter__(self) -> "_Connection":
        jvm = self._spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        try:
            cls = jvm.java.lang.Class.forName(self._driver, True, loader)
        except Exception:
            raise SourceError(
                f"JDBC driver class {self._driver} is not on Spark's classpath; install its jar"
                f"{_apt_hint(self._driver)} and add it to spark.jars") from None
        jprops = jvm.java.util.Properties()
        for k, v in self._props.items():
            if k.lower() not in _SPARK_ONLY:
                jprops.setProperty(k, v)
        try:
            self._conn = cls.newInstance().connect(self._url, jprops)
        except Exception as e:
            raise SourceError(f"cannot connect to {_redact(self._url)}: {_java_message(e)}; "
                              "check the URL, that the database is up, and the credentials") \
                from None
        if self._conn is None:
            raise SourceError(f"driver {self._driver} does not accept {_redact(self._url)}; "
                              "check the URL or give the right driver in properties")
        md = self._conn.getMetaData()
        self.product = str(md.getDatabaseProductName() or "")
        self.quote_char = str(md.getIdentifierQuoteString() or '"').strip() or '"'
        self._escape = str(md.getSearchStringEscape() or "")
        return self

    def __exit__(self, *exc) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass

    def quote(self, name: str) -> str:
        return kr.quote_identifier(name, self.quote_char)

    def _pattern(self, name: str | None) -> str | None:
        if name is None or not self._escape:
            return name
        return re.sub(r"([_%])", lambda m: self._escape + m.group(1),
                      name.replace(self._escape, self._escape * 2))

    def query(self, sql: str) -> list[list[str | None]]:
        """Rows of ``sql`` (at most one is needed by every caller), values as strings."""
        try:
            st = self._conn.createStatement()
            try:
                st.setMaxRows(1)
                rs = st.executeQuery(sql)
                n = rs.getMetaData().getColumnCount()
                rows = []
                while rs.next():
                    rows.append([rs.getString(i + 1) for i in range(n)])
                return rows
            finally:
                st.close()
        except Exception as e:
            raise SourceError(f"query on {_redact(self._url)} failed: {_java_message(e)} "
                              f"(SQL: {sql[:500]}); check the table and the key columns") from None

    def limit_one(self, sql: str) -> str:
        if re.search(r"mysql|mariadb|sqlite|h2", self.product, re.I):
            return sql + " LIMIT 1"
        return sql + " OFFSET 0 ROWS FETCH NEXT 1 ROWS ONLY"

    def _tables(self, schema: str | None, name: str, *, fold: bool = False
                ) -> list[tuple[str | None, str | None, str]]:
        """Tables named exactly ``name`` (in ``schema``); with ``fold``, compared ignoring case
        (this lists every table, so it is only the last resort)."""
        md = self._conn.getMetaData()
        if fold:
            rs = md.getTables(None, None, None, None)
        else:
            rs = md.getTables(None, self._pattern(schema), self._pattern(name), None)
        same = (lambda a, b: a.lower() == b.lower()) if fold else (lambda a, b: a == b)
        out = []
        while rs.next():
            tn = rs.getString("TABLE_NAME")
            ts = rs.getString("TABLE_SCHEM")
            if same(tn, name) and (schema is None or (ts is not None and same(ts, schema))):
                out.append((rs.getString("TABLE_CAT"), ts, tn))
        rs.close()
        return out

    def resolve_table(self, table: str) -> TableRef:
        """Find ``table`` (``name`` or ``schema.name``) exactly, else case-insensitively."""
        table = table.strip()
        forms: list[tuple[str | None, str]] = [(None, table)]
        if "." in table:
            s, n = table.split(".", 1)
            forms.insert(0, (s, n))
        try:
            found = []
            for schema, name in forms:
                for s, n in _case_variants(schema, name):
                    found = self._tables(s, n)
                    if found:
                        break
                if found:
                    break
            if not found:
                for schema, name in forms:
                    found = self._tables(schema, name, fold=True)
                    if found:
                        break
            if len(found) > 1:
                current = _safe(lambda: self._conn.getSchema())
                mine = [f for f in found if f[1] == current]
                if len(mine) == 1:
                    found = mine
                else:
                    raise ConfigError(
                        f"table {table!r} exists in several schemas "
                        f"({', '.join(str(f[1]) for f in found)}); write it as schema.table")
            if not found:
                raise ConfigError(f"table {table!r} does not exist at {_redact(self._url)}; "
                                  "check the name (schema.table to name a schema)")
            cat, schema, name = found[0]
            md = self._conn.getMetaData()
            rs = md.getColumns(cat, self._pattern(schema), self._pattern(name), "%")
            cols = []
            while rs.next():
                cols.append((rs.getString("COLUMN_NAME"), int(rs.getInt("DATA_TYPE")),
                             str(rs.getString("TYPE_NAME") or "")))
            rs.close()
        except ConfigError:
            raise
        except Exception as e:
            raise SourceError(f"cannot read the metadata of table {table!r} at "
                              f"{_redact(self._url)}: {_java_message(e)}") from None
        quoted = ".".join(self.quote(p) for p in (schema, name) if p)
        return TableRef(cat, schema, name, quoted, tuple(cols))

    def primary_key(self, tref: TableRef) -> list[str]:
        try:
            rs = self._conn.getMetaData().getPrimaryKeys(tref.catalog, tref.schema, tref.name)
            pk = []
            while rs.next():
                pk.append((int(rs.getShort("KEY_SEQ")), rs.getString("COLUMN_NAME")))
            rs.close()
        except Exception as e:
            raise SourceError(f"cannot read the primary key of {tref.display}: "
                              f"{_java_message(e)}") from None
        return [name for _, name in sorted(pk)]


def _safe(fn):
    try:
        return fn()
    except Exception:
        return None


def _case_variants(schema: str | None, name: str):
    seen = set()
    for f in (lambda x: x, str.lower, str.upper):
        v = (None if schema is None else f(schema), f(name))
        if v not in seen:
            seen.add(v)
            yield v


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


def _resolve_keys(conn: _Connection, tref: TableRef, wanted: tuple[str, ...] | None,
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


def _upper_bound(conn: _Connection, tref: TableRef, qcols: list[str], types: list[str],
                 order: str, last: tuple | None, on_behind: str, ctx: str) -> tuple | None:
    """The last key in ``order`` (max for asc, min for desc) among non-NULL keys, read once.

    With a previous ``last``, only keys at or after it are considered, so the answer is the
    database's own comparison (its collation); no row there while the table has keys means the
    new upper bound is behind ``last``.
    """
    direction = "DESC" if order == kr.ASC else "ASC"
    cols = ", ".join(qcols)
    order_by = ", ".join(f"{c} {direction}" for c in qcols)

    def first(pred) -> list[str | None] | None:
        sql = conn.limit_one(f"SELECT {cols} FROM {tref.quoted} WHERE "
                             f"{kr.render(pred, qcols, types)} ORDER BY {order_by}")
        rows = conn.query(sql)
        return rows[0] if rows else None

    nn = kr.not_null(len(qcols))
    row = first(kr.and_(nn, kr.lex_after(last, order, inclusive=True)) if last is not None
                else nn)
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
    return None if row is None else _decode(row, types, tref)


def _decode(row: list[str | None], types: list[str], tref: TableRef) -> tuple:
    try:
        return tuple(kr.canonical(t, v) for t, v in zip(types, row))
    except ValueError as e:
        raise SourceError(f"a key value of {tref.display} cannot be bookmarked: {e}; choose "
                          "other bookmark_keys") from None


def _first_key_extent(conn: _Connection, tref: TableRef, qcol: str,
                      key_type_: str) -> tuple[Any, Any]:
    rows = conn.query(f"SELECT MIN({qcol}), MAX({qcol}) FROM {tref.quoted}")
    if not rows or rows[0][0] is None or rows[0][1] is None:
        return None, None
    try:
        return kr.canonical(key_type_, rows[0][0]), kr.canonical(key_type_, rows[0][1])
    except ValueError:
        return None, None
