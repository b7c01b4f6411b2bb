"""The JDBC connection: one home for connecting through the driver JVM, driver lookup,
table references and identifier quoting (used by JDBC sources and sinks alike).

    with JdbcConnection(spark, "jdbc:postgresql://db/hr", {"user": "etl", "password": pw},
                        driver_for("jdbc:postgresql://db/hr")) as conn:
        tref = conn.resolve_table("emp")        # exact name, else case-insensitive
        conn.primary_key(tref)                  # ['empno']
        conn.query(f"SELECT MAX(empno) FROM {tref.quoted}")

The connection uses the same driver class (and jar) Spark's JDBC reader uses, from the driver
JVM; nothing here runs on executors.  URLs in messages are masked (:func:`redact_url`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, SourceError
from .jvm import java_error_text
from .planning.keyrange import quote_identifier
from .redact import redact_url

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


def driver_for(url: str) -> str:
    for prefix, cls, _ in DRIVERS:
        if url.lower().startswith(prefix):
            return cls
    raise ConfigError(f"no known JDBC driver for {redact_url(url)}; give the driver class as "
                      "properties={'driver': '...'} and put its jar on spark.jars")


def apt_hint(driver: str) -> str:
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
    """One JDBC connection on the driver JVM, through the driver class Spark also uses.

    Example::

        with JdbcConnection(spark, url, {"user": "etl"}, driver_for(url)) as conn:
            print(conn.product, conn.resolve_table("emp").quoted)
    """

    def __init__(self, spark: Any, url: str, props: dict[str, str], driver: str):
        self._spark, self._url, self._props, self._driver = spark, url, props, driver
        self._conn: Any = None
        self.product = ""
        self.quote_char = '"'
        self._escape = ""

    def __enter__(self) -> "JdbcConnection":
        jvm = self._spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        try:
            cls = jvm.java.lang.Class.forName(self._driver, True, loader)
        except Exception:
            raise SourceError(
                f"JDBC driver class {self._driver} is not on Spark's classpath; install its jar"
                f"{apt_hint(self._driver)} and add it to spark.jars") from None
        jprops = jvm.java.util.Properties()
        for k, v in self._props.items():
            if k.lower() not in _SPARK_ONLY:
                jprops.setProperty(k, v)
        try:
            self._conn = cls.newInstance().connect(self._url, jprops)
        except Exception as e:
            raise SourceError(f"cannot connect to {redact_url(self._url)}: {java_message(e)}; "
                              "check the URL, that the database is up, and the credentials") \
                from None
        if self._conn is None:
            raise SourceError(f"driver {self._driver} does not accept {redact_url(self._url)}; "
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
        return quote_identifier(name, self.quote_char)

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
            raise SourceError(f"query on {redact_url(self._url)} failed: {java_message(e)} "
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
                raise ConfigError(f"table {table!r} does not exist at {redact_url(self._url)}; "
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
                              f"{redact_url(self._url)}: {java_message(e)}") from None
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
                              f"{java_message(e)}") from None
        return [name for _, name in sorted(pk)]


    def transaction(self, statements: list[str], *, error: type[Exception] = SourceError
                    ) -> list[int]:
        """Run ``statements`` in one database transaction; returns their update counts.

        On failure the transaction is rolled back and ``error`` is raised with the driver's
        message (the URL masked)."""
        self._conn.setAutoCommit(False)
        st = self._conn.createStatement()
        try:
            counts = [int(st.executeUpdate(s)) for s in statements]
            self._conn.commit()
            return counts
        except Exception as e:
            try:
                self._conn.rollback()
            except Exception:  # noqa: BLE001
                pass
            raise error(f"statement on {redact_url(self._url)} failed: {java_message(e)}") \
                from None
        finally:
            st.close()

    def count(self, sql: str) -> int:
        """The single integer ``sql`` returns (``SELECT COUNT(*) ...``); 0 for NULL."""
        rows = self.query(sql)
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0


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


