"""The connection object: :class:`JdbcConnection` picks the JVM path (classic sessions,
:mod:`.jvmlink`) or a Python driver (Spark Connect, :mod:`.pydrivers`) and gives both one face:
table lookup, the key's bounds, the sink's publish transaction, errors with the URL masked.

    with JdbcConnection(spark, url, {"user": "etl"}, driver_for(url)) as conn:
        tref = conn.resolve_table("emp")
        conn.count(f"SELECT COUNT(*) FROM {tref.quoted}")
"""
from __future__ import annotations

import re
from typing import Any

from sparkmark.engine.compat import is_connect
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.engine.jdbc.dialects import TableRef
from sparkmark.engine.jdbc.jvmlink import jvm_link
from sparkmark.engine.jdbc.pydrivers import python_link
from sparkmark.planning.keyrange import quote_identifier
from sparkmark.core.redact import redact_url


class JdbcConnection:
    """sparkmark's own connection to a JDBC database, chosen by session type
    (:mod:`sparkmark.engine.jdbc`).

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
            self._link = jvm_link(self._spark, self._url, self._props, self._driver)
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
        JVM: one round trip); ``query(sql, columns)`` of exactly that SQL then
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
        one table spelled exactly ``name`` (in ``schema``) resolves it with its columns
        (``getTables`` then ``getColumns`` cost a metadata query more on every run).  Any
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
