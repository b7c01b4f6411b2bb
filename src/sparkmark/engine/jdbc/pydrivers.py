"""The Python path of :class:`~sparkmark.engine.jdbc.JdbcConnection` (Spark Connect: no JVM in
this process): DB-API connections opened from the JDBC URL and properties, pg8000 for
PostgreSQL and PyMySQL for MySQL/MariaDB (``pip install 'sparkmark[connect]'``), answering the
same metadata questions from the catalogs (``pg_catalog``, ``information_schema``).

    link = python_link("jdbc:postgresql://db:5432/hr?sslmode=require", {"user": "etl"})
    try:
        link.query("SELECT MAX(empno) FROM emp")        # [['7934']]
    finally:
        link.close()
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparkmark.core.errors import SourceError
from sparkmark.core.redact import redact_url

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
