"""The JDBC connection: one home for sparkmark's own connection to a JDBC source or target
(metadata, bounds, the sink's publish transaction), driver lookup, table references and
identifier quoting (used by JDBC sources and sinks alike).

    with JdbcConnection(spark, "jdbc:postgresql://db/hr", {"user": "etl", "password": pw},
                        driver_for("jdbc:postgresql://db/hr")) as conn:
        tref = conn.resolve_table("emp")        # exact name, else case-insensitive
        conn.primary_key(tref)                  # ['empno']
        conn.query(f"SELECT MAX(empno) FROM {tref.quoted}")

Where the connection comes from depends on the session, decided here and nowhere else:

- classic session: the same driver class (and jar) Spark's JDBC reader uses, in the driver JVM
  through py4j (any database with a JDBC driver);
- Spark Connect (no JVM on this side): a Python driver in this process, for PostgreSQL
  (``jdbc:postgresql:``, pg8000) and MySQL/MariaDB (``jdbc:mysql:``, ``jdbc:mariadb:``, PyMySQL),
  both in ``pip install 'sparkmark[connect]'``; the JDBC URL and properties are read for host,
  port, database, user, password and TLS.  Other databases are one clear error.

Nothing here runs on executors; Spark's own reads and writes still go through Spark's JDBC
source on the server.  URLs in messages are masked (:func:`redact_url`).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping

from sparkmark.engine.compat import is_connect
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.engine.jvm import decode_rows as _decode_rows
from sparkmark.engine.jvm import encode_rows, helper, java_class, java_error_text
from sparkmark.planning.keyrange import quote_identifier
from sparkmark.core.redact import redact_url

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

#: Spark JDBC reader options (not handed to the driver for the metadata connection)
_SPARK_ONLY = {"driver", "fetchsize", "querytimeout", "sessioninitstatement", "customschema",
               "pushdownpredicate", "pushdownaggregate", "pushdownlimit", "pushdownoffset",
               "pushdowntablesample", "preparequery", "keytab", "principal",
               "refreshkrb5config", "connectionprovider", "preferTimestampNTZ".lower(),
               "batchsize", "isolationlevel", "numpartitions"}


#: the drivers a ``jdbc:mysql:`` URL works with, in order of preference, and where to get them
MYSQL_DRIVERS = (
    ("com.mysql.cj.jdbc.Driver", "MySQL Connector/J (the mysql-connector-j jar, from "
     "dev.mysql.com or Maven Central)"),
    ("org.mariadb.jdbc.Driver", "MariaDB Connector/J (Debian/Ubuntu: apt-get install "
     "libmariadb-java, /usr/share/java/mariadb-java-client.jar)"),
)

#: Spark Connect probes: (session id, driver class) -> on the server's classpath
_CONNECT_PROBES: dict[tuple[str, str], bool] = {}


def driver_for(url: str) -> str:
    """The usual driver class for ``url``'s prefix (pure; :func:`resolve_driver` also looks
    at the properties and, for ``jdbc:mysql:``, at what Spark has).

    >>> driver_for("jdbc:postgresql://db/hr")
    'org.postgresql.Driver'
    """
    for prefix, cls, _ in DRIVERS:
        if url.lower().startswith(prefix):
            return cls
    raise ConfigError(f"no known JDBC driver for {redact_url(url)}; give the driver class as "
                      "properties={'driver': '...'} and put its jar on spark.jars")


def given_driver(props: Mapping[str, Any]) -> str | None:
    """The driver class ``props`` names (key ``driver``, any case), or None.

    >>> given_driver({"Driver": "org.h2.Driver"})
    'org.h2.Driver'
    """
    for k, v in props.items():
        if str(k).lower() == "driver" and v:
            return str(v)
    return None


def resolve_driver(spark: Any, url: str, props: Mapping[str, Any]) -> str:
    """The JDBC driver class for Spark's reads and writes of ``url`` and for sparkmark's own
    connection: the ``driver`` property when given, else by URL prefix; a ``jdbc:mysql:`` URL
    gets MySQL's driver (``com.mysql.cj.jdbc.Driver``) when Spark has it, else MariaDB's
    (``org.mariadb.jdbc.Driver``, which accepts ``jdbc:mysql:`` URLs), else one error naming
    both packages.  On a classic session the driver JVM's class loader is asked; over Spark
    Connect the server is asked by a schema-only read of ``SELECT 1`` (once per session).

        resolve_driver(spark, "jdbc:mysql://db:3306/hr", {"user": "etl"})
        # 'org.mariadb.jdbc.Driver' when only libmariadb-java is on spark.jars
    """
    given = given_driver(props)
    if given:
        return given
    if not url.lower().startswith("jdbc:mysql:"):
        return driver_for(url)
    for cls, _ in MYSQL_DRIVERS:
        if _has_driver(spark, cls, url, props):
            return cls
    raise SourceError(
        f"no JDBC driver for {redact_url(url)} on Spark's classpath: a jdbc:mysql: URL needs "
        f"{MYSQL_DRIVERS[0][1]} or {MYSQL_DRIVERS[1][1]}; install one, add its jar to "
        "spark.jars (or env SPARKMARK_JDBC_JARS), or name its class in properties={'driver': "
        "...}")


def _has_driver(spark: Any, cls: str, url: str, props: Mapping[str, Any]) -> bool:
    if not is_connect(spark):
        loader = java_class(spark, "java.lang.Thread").currentThread().getContextClassLoader()
        try:
            java_class(spark, "java.lang.Class").forName(cls, False, loader)
            return True
        except Exception:  # noqa: BLE001 - ClassNotFoundException
            return False
    key = (str(getattr(spark, "session_id", id(spark))), cls)
    if key not in _CONNECT_PROBES:
        reader = {str(k): str(v) for k, v in props.items()
                  if str(k).lower() in ("user", "password")}
        try:  # Spark loads the driver class before it connects
            probe = spark.read.jdbc(url, "(SELECT 1 AS x) sm_probe",
                                    properties={**reader, "driver": cls})
            _ = probe.schema  # analysed on the server: the driver class is loaded there
            _CONNECT_PROBES[key] = True
        except Exception as e:  # noqa: BLE001
            text = str(e)
            if "ClassNotFoundException" in text and cls in text:
                _CONNECT_PROBES[key] = False
            else:
                return True  # the class loaded; the read itself will report what failed
    return _CONNECT_PROBES[key]


def spark_url(url: str) -> str:
    """The URL to hand Spark's JDBC reader and writer.  Spark picks its SQL dialect by URL
    prefix and its MySQL dialect only matches ``jdbc:mysql``: a ``jdbc:mariadb:`` URL would get
    the default dialect, which quotes names with ``"`` (a string literal for MariaDB).  MariaDB's
    driver accepts the ``jdbc:mysql:`` scheme (3.x with ``permitMysqlScheme``), so the URL is
    rewritten; the driver class stays MariaDB's.

    >>> spark_url("jdbc:mariadb://db:3306/hr?user=etl")
    'jdbc:mysql://db:3306/hr?user=etl&permitMysqlScheme'
    """
    if not url.lower().startswith("jdbc:mariadb:"):
        return url
    rest = url[len("jdbc:mariadb:"):]
    return f"jdbc:mysql:{rest}{'&' if '?' in rest else '?'}permitMysqlScheme"


def apt_hint(driver: str) -> str:
    """Where to get ``driver``'s jar, for messages (empty when sparkmark does not know).

    >>> apt_hint("org.postgresql.Driver")
    ' (Debian/Ubuntu: apt-get install libpostgresql-jdbc-java)'
    """
    if driver == MYSQL_DRIVERS[0][0]:
        return (f" ({MYSQL_DRIVERS[0][1]}; for jdbc:mysql: URLs {MYSQL_DRIVERS[1][1]} works too, "
                f"with driver {MYSQL_DRIVERS[1][0]})")
    for _, cls, pkg in DRIVERS:
        if cls == driver and pkg:
            return f" (Debian/Ubuntu: apt-get install {pkg})"
    return ""



def java_message(error: BaseException) -> str:
    """The first message of a JDBC error (the driver's own words), for one-line errors."""
    return java_error_text(error).split(" <- ")[0]


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


class JdbcConnection:
    """sparkmark's own connection to a JDBC database, chosen by session type (module docstring).

    Example::

        with JdbcConnection(spark, url, {"user": "etl"}, driver_for(url)) as conn:
            print(conn.product, conn.resolve_table("emp").quoted)
    """

    def __init__(self, spark: Any, url: str, props: dict[str, str], driver: str):
        self._spark, self._url, self._props, self._driver = spark, url, props, driver
        self._link: Any = None
        self.product = ""
        self.quote_char = '"'

    def __enter__(self) -> "JdbcConnection":
        if self._spark is None or is_connect(self._spark):  # no JVM here: a Python driver
            self._link = python_link(self._url, self._props)
        else:
            self._link = _JvmLink(self._spark, self._url, self._props, self._driver)
        self.product = self._link.product
        self.quote_char = self._link.quote_char
        return self

    def __exit__(self, *exc) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None

    def quote(self, name: str) -> str:
        return quote_identifier(name, self.quote_char)

    @property
    def java_connection(self) -> Any:
        """The open ``java.sql.Connection`` in the driver JVM (classic sessions), for Spark
        calls that take one; ``None`` for a Python driver's connection or once closed.

        Example: ``sources.jdbcrelation.load_on(spark, conn.java_connection, ...)``
        """
        return getattr(self._link, "java_connection", None)

    def query(self, sql: str, columns: int | None = None) -> list[list[str | None]]:
        """The first row of ``sql`` (at most one is needed by every caller), values as
        strings; ``columns``: how many the SELECT list has, when the caller knows (saves
        asking the driver)."""
        try:
            return self._link.query(sql, columns)
        except Exception as e:
            raise SourceError(f"query on {redact_url(self._url)} failed: "
                              f"{self._link.message(e)} (SQL: {sql[:500]}); check the table and "
                              "the key columns") from None

    def ask_ahead(self, sql: str, columns: int) -> None:
        """A :meth:`query` this connection will be asked next, sent with its next table
        lookup (:meth:`resolve_table`) where the driver allows (PostgreSQL through the driver
        JVM: one round trip, issue 26); ``query(sql, columns)`` of exactly that SQL then
        answers from it, once. Elsewhere, or when it fails, nothing changes: the query runs
        when asked.

        Example: ``conn.ask_ahead(sql, 1); tref = conn.resolve_table("emp"); conn.query(sql, 1)``
        """
        ask = getattr(self._link, "ask_ahead", None)
        if ask is not None:
            ask(sql, columns)

    def limit_one(self, sql: str) -> str:
        if re.search(r"mysql|mariadb|sqlite|h2", self.product, re.I):
            return sql + " LIMIT 1"
        return sql + " OFFSET 0 ROWS FETCH NEXT 1 ROWS ONLY"

    def _tables(self, schema: str | None, name: str, *, fold: bool = False
                ) -> list[tuple[str | None, str | None, str]]:
        """Tables named exactly ``name`` (in ``schema``); with ``fold``, compared ignoring case
        (this lists every table, so it is only the last resort)."""
        same = (lambda a, b: a.lower() == b.lower()) if fold else (lambda a, b: a == b)
        return [(tc, ts, tn) for tc, ts, tn in self._link.tables(schema, name, fold)
                if same(tn, name) and (schema is None or (ts is not None and same(ts, schema)))]

    def resolve_table(self, table: str) -> TableRef:
        """Find ``table`` (``name`` or ``schema.name``) exactly, else case-insensitively."""
        table = table.strip()
        forms: list[tuple[str | None, str]] = [(None, table)]
        if "." in table:
            s, n = table.split(".", 1)
            forms.insert(0, (s, n))
        try:
            one = self._one_table(*forms[0])
            if one is not None:
                return one
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
                current = _safe(self._link.current_schema)
                mine = [f for f in found if f[1] == current]
                catalog_of = getattr(self._link, "current_catalog", None)
                if len(mine) != 1 and catalog_of is not None:
                    # MySQL Connector/J: databases are catalogs, and getTables without one
                    # answers every database's tables (MariaDB's driver asks the current one)
                    catalog = _safe(catalog_of)
                    mine = [f for f in found if catalog is not None and f[0] == catalog]
                if len(mine) == 1:
                    found = mine
                else:
                    raise ConfigError(
                        f"table {table!r} exists in several schemas "
                        f"({', '.join(str(f[1]) for f in found)}); write it as schema.table")
            if not found:
                raise ConfigError(f"table {table!r} does not exist at {redact_url(self._url)}; "
                                  "check the name (schema.table to name a schema)")
            cat, schema, name = found[0]
            cols = self._link.columns(cat, schema, name)
        except ConfigError:
            raise
        except Exception as e:
            raise SourceError(f"cannot read the metadata of table {table!r} at "
                              f"{redact_url(self._url)}: {self._link.message(e)}") from None
        quoted = ".".join(self.quote(p) for p in (schema, name) if p)
        return TableRef(cat, schema, name, quoted, tuple(cols))

    def _one_table(self, schema: str | None, name: str) -> TableRef | None:
        """The fast path of :meth:`resolve_table`: one ``getColumns`` call that names exactly
        one table spelled exactly ``name`` (in ``schema``) resolves it with its columns (issue
        26: ``getTables`` then ``getColumns`` cost a metadata query more on every run).  Any
        other answer (none, several, a link without it) is left to the full search."""
        table_columns = getattr(self._link, "table_columns", None)
        if table_columns is None:
            return None
        found = {k: v for k, v in table_columns(schema, name).items()
                 if k[2] == name and (schema is None or k[1] == schema)}
        if len(found) != 1:
            return None
        (cat, sch, tname), cols = next(iter(found.items()))
        quoted = ".".join(self.quote(p) for p in (sch, tname) if p)
        return TableRef(cat, sch, tname, quoted, tuple(cols))

    def primary_key(self, tref: TableRef) -> list[str]:
        try:
            return self._link.primary_key(tref.catalog, tref.schema, tref.name)
        except Exception as e:
            raise SourceError(f"cannot read the primary key of {tref.display}: "
                              f"{self._link.message(e)}") from None

    def transaction(self, statements: list[str], *, error: type[Exception] = SourceError
                    ) -> list[int]:
        """Run ``statements`` in one database transaction; returns their update counts.

        On failure the transaction is rolled back and ``error`` is raised with the driver's
        message (the URL masked)."""
        try:
            return self._link.transaction(statements)
        except Exception as e:
            raise error(f"statement on {redact_url(self._url)} failed: "
                        f"{self._link.message(e)}") from None

    def count(self, sql: str) -> int:
        """The single integer ``sql`` returns (``SELECT COUNT(*) ...``); 0 for NULL."""
        rows = self.query(sql, 1)
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0


# ------------------------------------------------------------------ classic: the driver JVM
#: driver class name -> (py4j gateway client, an instance of that java.sql.Driver)
_JVM_DRIVERS: dict[str, tuple[Any, Any]] = {}


#: (driver class, URL) -> (py4j gateway client, product name, identifier quote, search
#: string escape): what the driver says about the database's SQL, asked on the first
#: connection only (three py4j round trips on every later run, issue 26).  They are the
#: driver's constants for that URL; the product only picks the row-limit syntax.
_JVM_DIALECTS: dict[tuple[str, str], tuple[Any, str, str, str]] = {}


def _gateway_client(spark: Any) -> Any:
    return spark.sparkContext._gateway._gateway_client


def _jvm_helper(spark: Any) -> Any:
    """sparkmark's JDBC helper object in the session's JVM (``java/SparkmarkJdbcHelper.java``,
    loaded once per gateway by :func:`sparkmark.engine.jvm.helper`): it reads a metadata result set or
    a one-row query in the JVM and returns it as one string, so a read is one py4j round trip
    instead of one per value (issue 26: 31 of the 47 round trips left were ``getColumns`` values
    on a 4-column table).  ``None`` when it cannot be loaded: the caller reads value by value,
    as before."""
    return helper(spark, "SparkmarkJdbcHelper")


def _jvm_driver(spark: Any, driver: str) -> Any:
    """An instance of the JDBC driver class ``driver`` in the session's JVM, loaded once per
    gateway (issue 26: the class loader lookup, ``Class.forName`` and the new instance cost
    four py4j round trips on every run).  A ``java.sql.Driver`` holds no connection state:
    each ``connect`` is a new connection, as before."""
    client = _gateway_client(spark)
    cached = _JVM_DRIVERS.get(driver)
    if cached is not None and cached[0] is client:
        return cached[1]
    loader = java_class(spark, "java.lang.Thread").currentThread().getContextClassLoader()
    try:
        cls = java_class(spark, "java.lang.Class").forName(driver, True, loader)
    except Exception:
        raise SourceError(
            f"JDBC driver class {driver} is not on Spark's classpath; install its jar"
            f"{apt_hint(driver)} and add it to spark.jars") from None
    try:
        instance = cls.newInstance()
    except Exception as e:
        raise SourceError(f"cannot create the JDBC driver {driver}: {java_message(e)}") from None
    _JVM_DRIVERS[driver] = (client, instance)
    return instance


class _JvmLink:
    """The JDBC driver class Spark uses, in the driver JVM (py4j): classic sessions only."""

    def __init__(self, spark: Any, url: str, props: dict[str, str], driver: str):
        jdriver = _jvm_driver(spark, driver)
        self._helper = _jvm_helper(spark)
        self._metadata: Any = None
        #: primary keys learnt with the columns (PostgreSQL), by (catalog, schema, table)
        self._keys: dict[tuple[str | None, str | None, str], list[str]] = {}
        #: a query asked ahead (ask_ahead), and the answers of those that ran, by (sql, columns)
        self._ahead: tuple[str, int] | None = None
        self._answers: dict[tuple[str, int], list[list[str | None]]] = {}
        kept = [[k, v] for k, v in props.items() if k.lower() not in _SPARK_ONLY]
        try:
            if self._helper is not None:  # the properties as text: one round trip
                self._conn = self._helper.connect(jdriver, url, encode_rows(kept))
            else:
                jprops = java_class(spark, "java.util.Properties")()
                for k, v in kept:
                    jprops.setProperty(k, v)
                self._conn = jdriver.connect(url, jprops)
        except Exception as e:
            raise SourceError(f"cannot connect to {redact_url(url)}: {java_message(e)}; "
                              "check the URL, that the database is up, and the credentials") \
                from None
        if self._conn is None:
            raise SourceError(f"driver {driver} does not accept {redact_url(url)}; "
                              "check the URL or give the right driver in properties")
        key = (driver, url)
        known = _JVM_DIALECTS.get(key)
        if known is None or known[0] is not _gateway_client(spark):
            md = self._md
            known = (_gateway_client(spark), str(md.getDatabaseProductName() or ""),
                     str(md.getIdentifierQuoteString() or '"').strip() or '"',
                     str(md.getSearchStringEscape() or ""))
            _JVM_DIALECTS[key] = known
        _, self.product, self.quote_char, self._escape = known

    message = staticmethod(java_message)

    @property
    def _md(self) -> Any:
        """The connection's ``DatabaseMetaData``, asked once (the helper's metadata reads ask
        it inside the JVM and need no handle here)."""
        if self._metadata is None:
            self._metadata = self._conn.getMetaData()
        return self._metadata

    @property
    def java_connection(self) -> Any:
        return self._conn

    def close(self) -> None:
        """Close the connection: on the helper's daemon thread when there is one (issue 26:
        PgJDBC's ``close`` took 0.2-1 ms a run, waited for after the last read; the
        connection holds no transaction, so nothing depends on when it ends)."""
        try:
            if self._helper is not None:
                try:
                    self._helper.closeLater(self._conn)
                    return
                except Exception:  # noqa: BLE001 - an older helper class: close here
                    pass
            self._conn.close()
        except Exception:
            pass

    def _pattern(self, name: str | None) -> str | None:
        if name is None or not self._escape:
            return name
        return re.sub(r"([_%])", lambda m: self._escape + m.group(1),
                      name.replace(self._escape, self._escape * 2))

    def ask_ahead(self, sql: str, columns: int) -> None:
        """Run ``sql`` (its first row of ``columns`` values) with the next catalog read, in its
        round trip, where that read is PostgreSQL's one query; :meth:`query` of exactly this SQL
        then answers from it, once (issue 26: the upper-bound query of an incremental run)."""
        self._ahead = (sql, columns)

    def query(self, sql: str, columns: int | None = None) -> list[list[str | None]]:
        if self._answers:
            known = self._answers.pop((sql, -1 if columns is None else columns), None)
            if known is not None:
                return known
        if self._helper is not None:
            return _decode_rows(self._helper.firstRow(self._conn, sql,
                                                      -1 if columns is None else columns))
        st = self._conn.createStatement()
        try:
            st.setMaxRows(1)  # the driver returns at most this one row: no second next()
            rs = st.executeQuery(sql)
            n = rs.getMetaData().getColumnCount() if columns is None else columns
            return [[rs.getString(i + 1) for i in range(n)]] if rs.next() else []
        finally:
            st.close()

    def tables(self, schema: str | None, name: str, fold: bool
               ) -> list[tuple[str | None, str | None, str]]:
        md = self._md
        if fold:
            rs = md.getTables(None, None, None, None)
        else:
            rs = md.getTables(None, self._pattern(schema), self._pattern(name), None)
        out = []
        while rs.next():
            out.append((rs.getString("TABLE_CAT"), rs.getString("TABLE_SCHEM"),
                        rs.getString("TABLE_NAME")))
        rs.close()
        return out

    def current_schema(self) -> str | None:
        return self._conn.getSchema()

    def current_catalog(self) -> str | None:
        return self._conn.getCatalog()

    def columns(self, cat: str | None, schema: str | None, name: str
                ) -> list[tuple[str, int, str]]:
        rs = self._md.getColumns(cat, self._pattern(schema),
                                                 self._pattern(name), "%")
        cols = []
        while rs.next():
            cols.append((rs.getString("COLUMN_NAME"), int(rs.getInt("DATA_TYPE")),
                         str(rs.getString("TYPE_NAME") or "")))
        rs.close()
        return cols

    def table_columns(self, schema: str | None, name: str
                      ) -> dict[tuple[str | None, str | None, str], list[tuple[str, int, str]]]:
        """The columns of every table ``getColumns`` matches (``schema``/``name`` as escaped
        patterns), by (catalog, schema, table), in the driver's order."""
        out: dict[tuple[str | None, str | None, str], list[tuple[str, int, str]]] = {}
        ahead, self._ahead = self._ahead, None
        if self._helper is not None and self.product == "PostgreSQL":
            try:  # one narrower catalog query answers getColumns and getPrimaryKeys (issue 26)
                if ahead is None:
                    text = self._helper.pgTableColumns(self._conn, self._pattern(schema),
                                                       self._pattern(name))
                else:  # and the query asked ahead, in the same round trip
                    text = self._helper.pgTableColumnsThen(
                        self._conn, self._pattern(schema), self._pattern(name), *ahead)
                    size, _, text = text.partition(":")
                    if int(size) >= 0:
                        self._answers[ahead] = _decode_rows(text[:int(size)])
                        text = text[int(size):]
                rows = _decode_rows(text)
            except Exception as e:  # noqa: BLE001 - not PgJDBC's connection: the general path
                log.debug("PostgreSQL catalog query: %s; asking getColumns", java_message(e))
            else:
                keys: dict[tuple[str | None, str | None, str], list[tuple[int, str]]] = {}
                for cat, sch, tname, col, jtype, type_name, seq in rows:
                    key = (cat, sch, str(tname))
                    out.setdefault(key, []).append(
                        (col, int(str(jtype)), str(type_name or "")))  # type: ignore[arg-type]
                    pk = keys.setdefault(key, [])
                    if seq is not None:
                        pk.append((int(seq), str(col)))
                self._keys.update({k: [c for _, c in sorted(v)] for k, v in keys.items()})
                return out
        if self._helper is not None:
            for cat, sch, tname, col, jtype, type_name in _decode_rows(self._helper.tableColumnsOf(
                    self._conn, self._pattern(schema), self._pattern(name))):
                out.setdefault((cat, sch, str(tname)), []).append(
                    (col, int(str(jtype)), str(type_name or "")))  # type: ignore[arg-type]
            return out
        rs = self._md.getColumns(None, self._pattern(schema),
                                                 self._pattern(name), "%")
        while rs.next():
            key = (rs.getString("TABLE_CAT"), rs.getString("TABLE_SCHEM"),
                   str(rs.getString("TABLE_NAME")))
            out.setdefault(key, []).append((rs.getString("COLUMN_NAME"), int(rs.getInt("DATA_TYPE")),
                                            str(rs.getString("TYPE_NAME") or "")))
        rs.close()
        return out

    def primary_key(self, cat: str | None, schema: str | None, name: str) -> list[str]:
        known = self._keys.get((cat, schema, name))
        if known is not None:  # from table_columns' PostgreSQL query
            return list(known)
        if self._helper is not None:
            rows = _decode_rows(self._helper.primaryKeyOf(self._conn, cat, schema, name))
            return [n for _, n in sorted((int(str(seq)), n) for seq, n in rows)]  # type: ignore
        rs = self._md.getPrimaryKeys(cat, schema, name)
        pk = []
        while rs.next():
            pk.append((int(rs.getShort("KEY_SEQ")), rs.getString("COLUMN_NAME")))
        rs.close()
        return [n for _, n in sorted(pk)]

    def transaction(self, statements: list[str]) -> list[int]:
        self._conn.setAutoCommit(False)
        st = self._conn.createStatement()
        try:
            counts = [int(st.executeUpdate(s)) for s in statements]
            self._conn.commit()
            return counts
        except Exception:
            try:
                self._conn.rollback()
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            st.close()


# ------------------------------------------------------- Spark Connect: a Python driver here
#: what the Python drivers cover, for messages
PYTHON_DRIVERS = ("PostgreSQL (jdbc:postgresql:, with pg8000) and MySQL/MariaDB (jdbc:mysql:, "
                  "jdbc:mariadb:, with PyMySQL)")


@dataclass(frozen=True)
class JdbcUrl:
    """The parts of a ``jdbc:postgresql:`` / ``jdbc:mysql:`` / ``jdbc:mariadb:`` URL.

    >>> u = parse_jdbc_url("jdbc:postgresql://db:5433,db2/hr?user=etl&ssl=true")
    >>> u.kind, u.hosts, u.database, u.params["user"]
    ('postgresql', (('db', 5433), ('db2', 5432)), 'hr', 'etl')
    """

    kind: str                               # "postgresql" or "mysql" (MariaDB too)
    hosts: tuple[tuple[str, int], ...]
    database: str | None
    params: dict[str, str]                  # query parameters and user:password@ (decoded)


_DEFAULT_PORT = {"postgresql": 5432, "mysql": 3306}


def parse_jdbc_url(url: str) -> JdbcUrl:
    """Split a PostgreSQL or MySQL/MariaDB JDBC URL (for the Python drivers over Spark Connect).

    ``jdbc:postgresql://host[:port][,host2[:port]]/db?k=v``, ``jdbc:postgresql:db`` (local),
    ``jdbc:mysql://[user[:password]@]host[:port]/db?k=v`` and the same with ``jdbc:mariadb:``.
    Raises :class:`SourceError` for anything else.  Example: ``parse_jdbc_url(url).database``.
    """
    from urllib.parse import parse_qsl, unquote
    low = url.lower()
    kind = next((k for p, k in (("jdbc:postgresql:", "postgresql"), ("jdbc:mysql:", "mysql"),
                                ("jdbc:mariadb:", "mysql")) if low.startswith(p)), None)
    if kind is None:
        raise SourceError(unsupported_over_connect(url))
    rest = url.split(":", 2)[2]
    rest, _, query = rest.partition("?")
    params = {k: v for k, v in parse_qsl(query, keep_blank_values=True)}
    if not rest.startswith("//"):
        if kind == "postgresql" and "/" not in rest and ":" not in rest:  # jdbc:postgresql:db
            return JdbcUrl(kind, (("localhost", 5432),), rest or None, params)
        raise SourceError(
            f"the JDBC URL {redact_url(url)} has a form the Python driver sparkmark uses over "
            f"Spark Connect does not read (load balancing, replication or X protocol URLs); "
            f"use {kind}://host:port/database, or run the job on a classic Spark session")
    netloc, _, path = rest[2:].partition("/")
    if "@" in netloc:
        auth, _, netloc = netloc.rpartition("@")
        user, _, pw = auth.partition(":")
        params.setdefault("user", unquote(user))
        if pw:
            params.setdefault("password", unquote(pw))
    hosts = []
    for part in (netloc or "localhost").split(","):
        m = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:]*)(?::(\d+))?", part.strip())
        if m is None or not (m.group(1) or m.group(3) is not None):
            raise SourceError(f"cannot read the host of the JDBC URL {redact_url(url)}")
        host = m.group(1) or m.group(3) or "localhost"
        port = m.group(2) or m.group(4)
        hosts.append((host, int(port) if port else _DEFAULT_PORT[kind]))
    database = unquote(path.strip("/")) or None
    return JdbcUrl(kind, tuple(hosts), database, params)


def unsupported_over_connect(url: str) -> str:
    """The message for a database sparkmark cannot reach over Spark Connect.

    Example: ``unsupported_over_connect("jdbc:derby:/tmp/db")`` names what is supported.
    """
    return (f"over Spark Connect sparkmark reaches a JDBC database from this Python process with "
            f"a Python driver (there is no driver JVM here), and has one for {PYTHON_DRIVERS} "
            f"only; {redact_url(url)} is neither: run this job on a classic Spark session "
            "(spark-submit, any master), or read the table without bookmarks through "
            "spark.read.jdbc")


def python_link(url: str, props: dict[str, str]) -> "_DbApiLink":
    """A Python DB-API connection for ``url`` (Spark Connect sessions); see the module docs.

    Example: ``python_link("jdbc:postgresql://db/hr", {"user": "etl"}).query("SELECT 1")``.
    """
    parsed = parse_jdbc_url(url)
    opts = {k.lower(): str(v) for k, v in props.items()}
    opts.update({k.lower(): v for k, v in parsed.params.items()})  # the URL's own win, as in JDBC
    link = _PgLink if parsed.kind == "postgresql" else _MySqlLink
    return link(url, parsed, opts)


_TRUE = ("true", "1", "yes", "on", "")  # "" : a bare ?ssl


class _DbApiLink:
    """What the PostgreSQL and MySQL Python drivers share (autocommit reads, one transaction)."""

    product = ""
    quote_char = '"'

    def __init__(self, url: str, parsed: JdbcUrl, opts: dict[str, str]):
        self._url = url
        self._conn: Any = None
        last: Exception | None = None
        for host, port in parsed.hosts:
            try:
                self._conn = self._connect(host, port, parsed.database, opts)
                break
            except ImportError as e:
                raise SourceError(
                    f"{self.product} over Spark Connect needs the Python package "
                    f"{(e.name or 'its driver').split('.')[0]} "
                    "(sparkmark opens its own connection for the table's keys and bounds, and "
                    "to publish staged rows): pip install 'sparkmark[connect]'") from None
            except SourceError:
                raise  # bad settings (sslmode): the same on every host
            except Exception as e:  # noqa: BLE001 - try the next host
                last = e
        if self._conn is None:
            raise SourceError(f"cannot connect to {redact_url(url)}: "
                              f"{self.message(last) if last else 'no host'}; check the URL, that "
                              "the database is up and reachable from this Python process (over "
                              "Spark Connect sparkmark connects from here, as to the state "
                              "store), and the credentials") from None

    def _connect(self, host: str, port: int, database: str | None, opts: dict[str, str]) -> Any:
        raise NotImplementedError

    def message(self, error: BaseException) -> str:
        return (str(error).strip().splitlines() or [type(error).__name__])[0][:800]

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001
            pass

    def _rows(self, sql: str, args: tuple = (), limit: int | None = None) -> list[tuple]:
        cur = self._conn.cursor()
        try:
            if args:
                cur.execute(sql, args)
            else:
                cur.execute(sql)
            if cur.description is None:
                return []
            return list(cur.fetchmany(limit) if limit else cur.fetchall())
        finally:
            cur.close()

    def query(self, sql: str, columns: int | None = None) -> list[list[str | None]]:
        return [[_text(v) for v in row] for row in self._rows(sql, limit=1)]

    def transaction(self, statements: list[str]) -> list[int]:
        self._autocommit(False)
        cur = self._conn.cursor()
        try:
            counts = []
            for s in statements:
                cur.execute(s)
                counts.append(max(int(cur.rowcount), 0))
            self._conn.commit()
            return counts
        except Exception:
            try:
                self._conn.rollback()
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            cur.close()
            try:
                self._autocommit(True)
            except Exception:  # noqa: BLE001 - the connection is closed next anyway
                pass

    def _autocommit(self, on: bool) -> None:
        raise NotImplementedError


def _text(value: Any) -> str | None:
    """A Python value as the text JDBC's ``getString`` gives (what the key planner parses)."""
    import datetime as dt
    from decimal import Decimal
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):  # as PostgreSQL prints it: 2024-05-01 10:00:00.5+00
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        off = value.utcoffset()
        if off is not None:
            minutes = int(off.total_seconds()) // 60
            sign, minutes = ("-", -minutes) if minutes < 0 else ("+", minutes)
            text += f"{sign}{minutes // 60:02d}" + (f":{minutes % 60:02d}" if minutes % 60 else "")
        return text
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


#: PostgreSQL type names (pg_type.typname) -> java.sql.Types, as PgJDBC reports them
_PG_TYPES = {"int2": 5, "int4": 4, "int8": -5, "oid": -5, "numeric": 2, "float4": 7,
             "float8": 8, "money": 8, "bool": -7, "bpchar": 1, "char": 1, "varchar": 12,
             "text": 12, "name": 12, "citext": 12, "date": 91, "time": 92, "timetz": 92,
             "timestamp": 93, "timestamptz": 93, "bytea": -2}


class _PgLink(_DbApiLink):
    product = "PostgreSQL"
    quote_char = '"'

    def _connect(self, host: str, port: int, database: str | None, opts: dict[str, str]) -> Any:
        import pg8000.dbapi
        kw: dict[str, Any] = {"user": opts.get("user") or _os_user(), "host": host,
                              "port": port, "database": database,
                              "password": opts.get("password"),
                              "application_name": opts.get("applicationname", "sparkmark")}
        if opts.get("sockettimeout", "0") not in ("", "0"):
            kw["timeout"] = float(opts["sockettimeout"])
        mode = opts.get("sslmode") or ("verify-full" if opts.get("ssl") in _TRUE else "disable")
        kw["ssl_context"] = _ssl_context(mode, opts.get("sslrootcert"))
        conn = pg8000.dbapi.connect(**kw)
        conn.autocommit = True
        if opts.get("currentschema"):
            cur = conn.cursor()
            cur.execute("SELECT set_config('search_path', %s, false)", (opts["currentschema"],))
            cur.close()
        return conn

    def _autocommit(self, on: bool) -> None:
        self._conn.autocommit = on

    def message(self, error: BaseException) -> str:
        arg = error.args[0] if getattr(error, "args", None) else None
        if isinstance(arg, dict) and arg.get("M"):  # a server error: {'S': 'ERROR', 'M': ...}
            return str(arg["M"])[:800]
        return super().message(error)

    _REL = ("FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace ")

    def tables(self, schema: str | None, name: str, fold: bool
               ) -> list[tuple[str | None, str | None, str]]:
        cmp = (lambda col: f"lower({col}) = lower(%s)") if fold else (lambda col: f"{col} = %s")
        sql = (f"SELECT current_database(), n.nspname, c.relname {self._REL}"
               f"WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p') AND {cmp('c.relname')}")
        args: tuple = (name,)
        if schema is not None:
            sql += f" AND {cmp('n.nspname')}"
            args += (schema,)
        return [(r[0], r[1], r[2]) for r in self._rows(sql, args)]

    def current_schema(self) -> str | None:
        rows = self._rows("SELECT current_schema()")
        return rows[0][0] if rows else None

    def columns(self, cat: str | None, schema: str | None, name: str
                ) -> list[tuple[str, int, str]]:
        rows = self._rows(
            "SELECT a.attname, COALESCE(b.typname, t.typname), t.typcategory "
            f"{self._REL}JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
            "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
            "LEFT JOIN pg_catalog.pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY a.attnum", (schema, name))
        return [(r[0], 2003 if r[2] == "A" else _PG_TYPES.get(r[1], 1111), str(r[1]))
                for r in rows]

    def primary_key(self, cat: str | None, schema: str | None, name: str) -> list[str]:
        rows = self._rows(
            f"SELECT a.attname {self._REL}JOIN pg_catalog.pg_index i ON i.indrelid = c.oid "
            "AND i.indisprimary "
            "CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, seq) "
            "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
            "WHERE n.nspname = %s AND c.relname = %s ORDER BY k.seq", (schema, name))
        return [r[0] for r in rows]


#: MySQL/MariaDB information_schema DATA_TYPE -> java.sql.Types, as their JDBC drivers report
_MYSQL_TYPES = {"tinyint": -6, "smallint": 5, "mediumint": 4, "int": 4, "integer": 4,
                "bigint": -5, "decimal": 3, "numeric": 3, "float": 7, "double": 8, "real": 8,
                "bit": -7, "boolean": 16, "bool": 16, "char": 1, "varchar": 12, "tinytext": -1,
                "text": -1, "mediumtext": -1, "longtext": -1, "enum": 1, "set": 1, "json": -1,
                "date": 91, "datetime": 93, "timestamp": 93, "time": 92, "year": 5,
                "binary": -2, "varbinary": -3, "tinyblob": -4, "blob": -4, "mediumblob": -4,
                "longblob": -4}


class _MySqlLink(_DbApiLink):
    product = "MySQL"
    quote_char = "`"

    def _connect(self, host: str, port: int, database: str | None, opts: dict[str, str]) -> Any:
        import pymysql
        kw: dict[str, Any] = {"host": host, "port": port, "user": opts.get("user") or _os_user(),
                              "password": opts.get("password") or "", "database": database,
                              "autocommit": True, "charset": "utf8mb4"}
        if opts.get("connecttimeout", "0") not in ("", "0"):
            kw["connect_timeout"] = max(1, int(float(opts["connecttimeout"]) / 1000))
        # Connector/J: sslMode=DISABLED..VERIFY_IDENTITY or useSSL=true; MariaDB: sslMode=trust..
        mode = (opts.get("sslmode") or "").lower().replace("_", "-")
        if not mode and (opts.get("usessl") in _TRUE or opts.get("ssl") in _TRUE):
            mode = "require"
        mode = {"required": "require", "trust": "require", "verify-identity": "verify-full",
                "preferred": "prefer"}.get(mode, mode)
        ctx = _ssl_context(mode or "disable", opts.get("servercacert") or opts.get("sslca"))
        if ctx is not None:
            kw["ssl"] = ctx
        conn = pymysql.connect(**kw)
        rows = conn.cursor()
        rows.execute("SELECT VERSION()")
        version = str((rows.fetchone() or [""])[0])
        rows.close()
        self.product = "MariaDB" if "mariadb" in version.lower() else "MySQL"
        return conn

    def _autocommit(self, on: bool) -> None:
        self._conn.autocommit(on)

    def message(self, error: BaseException) -> str:
        args: tuple = tuple(getattr(error, "args", ()))
        if len(args) >= 2 and isinstance(args[0], int):  # (1146, "Table 'x.y' doesn't exist")
            return str(args[1])[:800]
        return super().message(error)

    def tables(self, schema: str | None, name: str, fold: bool
               ) -> list[tuple[str | None, str | None, str]]:
        # like MariaDB's JDBC driver: databases are catalogs; no schema means this database
        cmp = (lambda col: f"LOWER({col}) = LOWER(%s)") if fold else (lambda col: f"{col} = %s")
        sql = f"SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE " \
              f"{cmp('TABLE_NAME')} AND "
        if schema is None:
            rows = self._rows(sql + "TABLE_SCHEMA = DATABASE()", (name,))
            return [(r[0], None, r[1]) for r in rows]
        rows = self._rows(sql + cmp("TABLE_SCHEMA"), (name, schema))
        return [(r[0], r[0], r[1]) for r in rows]

    def current_schema(self) -> str | None:
        rows = self._rows("SELECT DATABASE()")
        return rows[0][0] if rows else None

    def columns(self, cat: str | None, schema: str | None, name: str
                ) -> list[tuple[str, int, str]]:
        rows = self._rows("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM "
                          "information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                          "ORDER BY ORDINAL_POSITION", (schema or cat, name))
        out = []
        for col, dtype, ctype in rows:
            dtype, ctype = str(dtype).lower(), str(ctype).lower()
            code = -7 if ctype.startswith("tinyint(1)") else _MYSQL_TYPES.get(dtype, 1111)
            tname = dtype.upper() + (" UNSIGNED" if "unsigned" in ctype else "")
            out.append((str(col), code, tname))
        return out

    def primary_key(self, cat: str | None, schema: str | None, name: str) -> list[str]:
        rows = self._rows("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE "
                          "TABLE_SCHEMA = %s AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' "
                          "ORDER BY ORDINAL_POSITION", (schema or cat, name))
        return [str(r[0]) for r in rows]


def _os_user() -> str:
    import getpass
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return "postgres"


def _ssl_context(mode: str, cafile: str | None) -> Any:
    """An ``ssl.SSLContext`` for a libpq/JDBC-style ``sslmode`` (None: no TLS).

    ``disable``/``allow``/``prefer``: none (the Python drivers cannot fall back, so TLS is
    only used when asked for); ``require``: encrypted, unverified; ``verify-ca``: the CA is
    checked; ``verify-full``: the CA and the host name."""
    import ssl
    mode = mode.lower()
    if mode in ("disable", "allow", "prefer", "false"):
        return None
    if mode not in ("require", "verify-ca", "verify-full"):
        raise SourceError(f"sslmode {mode!r} is not one of disable, require, verify-ca, "
                          "verify-full")
    ctx = ssl.create_default_context(cafile=cafile)
    if mode != "verify-full":
        ctx.check_hostname = False
    if mode == "require":
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


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


