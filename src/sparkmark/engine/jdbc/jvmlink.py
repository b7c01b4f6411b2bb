"""The JVM path of :class:`~sparkmark.engine.jdbc.JdbcConnection` (classic sessions): the
JDBC driver class Spark uses, loaded once per py4j gateway in the driver JVM, and its metadata
reads, done in the JVM by ``java/SparkmarkJdbcHelper.java`` where that class loads (one py4j
round trip per read) and value by value through py4j where it does not.

    link = jvm_link(spark, "jdbc:postgresql://db/hr", {"user": "etl"}, "org.postgresql.Driver")
    try:
        link.query("SELECT MAX(empno) FROM emp", 1)     # [['7934']]
    finally:
        link.close()
"""
from __future__ import annotations

import logging
import re
from typing import Any

from sparkmark.core.errors import SourceError
from sparkmark.engine.jdbc.dialects import apt_hint
from sparkmark.engine.jvm import decode_rows as _decode_rows
from sparkmark.engine.jvm import encode_rows, helper, java_class, java_error_text
from sparkmark.core.redact import redact_url

log = logging.getLogger("sparkmark.jdbc")

#: Spark JDBC reader options (not handed to the driver for the metadata connection)
_SPARK_ONLY = {"driver", "fetchsize", "querytimeout", "sessioninitstatement", "customschema",
               "pushdownpredicate", "pushdownaggregate", "pushdownlimit", "pushdownoffset",
               "pushdowntablesample", "preparequery", "keytab", "principal",
               "refreshkrb5config", "connectionprovider", "preferTimestampNTZ".lower(),
               "batchsize", "isolationlevel", "numpartitions"}


def java_message(error: BaseException) -> str:
    """The first message of a JDBC error (the driver's own words), for one-line errors."""
    return java_error_text(error).split(" <- ")[0]


#: driver class name -> (py4j gateway client, an instance of that java.sql.Driver)
_JVM_DRIVERS: dict[str, tuple[Any, Any]] = {}


#: (driver class, URL) -> (py4j gateway client, product name, identifier quote, search
#: string escape): what the driver says about the database's SQL, asked on the first
#: connection only (three py4j round trips on every later run).  They are the
#: driver's constants for that URL; the product only picks the row-limit syntax.
_JVM_DIALECTS: dict[tuple[str, str], tuple[Any, str, str, str]] = {}


def _gateway_client(spark: Any) -> Any:
    return spark.sparkContext._gateway._gateway_client


def _jvm_helper(spark: Any) -> Any:
    """sparkmark's JDBC helper object in the session's JVM (``java/SparkmarkJdbcHelper.java``,
    loaded once per gateway by :func:`sparkmark.engine.jvm.helper`): it reads a metadata result set or
    a one-row query in the JVM and returns it as one string, so a read is one py4j round trip
    instead of one per value (value by value, 31 of a run's 47 round trips were ``getColumns``
    values on a 4-column table).  ``None`` when it cannot be loaded: the caller reads value by
    value, as before."""
    return helper(spark, "SparkmarkJdbcHelper")


def _jvm_driver(spark: Any, driver: str) -> Any:
    """An instance of the JDBC driver class ``driver`` in the session's JVM, loaded once per
    gateway (the class loader lookup, ``Class.forName`` and the new instance cost
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
        """Close the connection: on the helper's daemon thread when there is one (PgJDBC's
        ``close`` took 0.2-1 ms a run, waited for after the last read; the connection holds
        no transaction, so nothing depends on when it ends)."""
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
        then answers from it, once (the upper-bound query of an incremental run)."""
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
            try:  # one narrower catalog query answers getColumns and getPrimaryKeys
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


def jvm_link(spark: Any, url: str, props: dict[str, str], driver: str) -> _JvmLink:
    """An open connection to ``url`` through the JDBC driver class ``driver`` in the session's
    JVM (classic sessions); what :class:`~sparkmark.engine.jdbc.JdbcConnection` uses there.

    Example: ``jvm_link(spark, url, {"user": "etl"}, driver_for(url)).query("SELECT 1")``.
    """
    return _JvmLink(spark, url, props, driver)
