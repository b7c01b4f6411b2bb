"""``from_catalog`` outside AWS: the Spark catalog first, then a mapping file.

Env ``SPARKMARK_GLUE_CATALOG`` names a JSON or YAML file keyed by ``"database.table"``::

    {"database.relatedqueries_csv": {"path": "s3://bucket/queries/", "format": "csv",
                                      "format_options": {"withHeader": false},
                                      "options": {"maxBand": 900000}},
     "hr.emp": {"url": "jdbc:postgresql://db:5432/hr", "table": "emp",
                "driver": "org.postgresql.Driver", "user": "etl", "password": "..."}}

A file entry has ``path`` (or ``paths``), ``format`` and optional ``format_options`` (Glue's
names such as ``withHeader``/``separator``, or Spark's) and ``options`` (Glue's S3 connection
options: ``maxBand``, ``boundedFiles``, ``exclusions``, ``recurse``, ...).  A relative path is
relative to the mapping file; ``s3://`` paths go through ``SPARKMARK_PATH_MAP``.  A JDBC entry
has ``url`` and ``table`` (or ``dbtable``), optional ``driver``, ``user``, ``password`` (or
``password_env``, the environment variable holding it) and ``properties``; or ``connection``
(a name in the ``connections`` section) instead of ``url`` and the credentials.

Any table may carry ``columns``, Glue's ``StorageDescriptor.Columns`` shape
(``[{"Name": "id", "Type": "bigint"}, ...]``): reads through the catalog rename headerless CSV
columns to these names and cast every column to its type (a value that does not fit becomes
null); ``resolveChoice(choice="match_catalog")`` casts to them.

The top-level ``connections`` section holds Glue connections for ``extract_jdbc_conf``,
``from_jdbc_conf`` and ``connectionName``::

    {"connections": {"pg-prod": {"url": "jdbc:postgresql://db:5432/hr", "user": "etl",
                                 "password_env": "PG_PASSWORD"}}}

Table formats: ``{"format": "iceberg", "table": "local.db.orders"}`` (a table of an Iceberg
``SparkCatalog``), ``{"format": "delta", "path": "s3://lake/events"}`` or ``{"format":
"delta", "table": "lake.events"}``; optional ``options`` (the source's, e.g. ``onNonAppend``).
A table whose Spark catalog provider is ``iceberg`` or ``delta`` needs no entry.

(Glue's property names ``JDBC_CONNECTION_URL``, ``USERNAME``, ``PASSWORD`` work too.)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.glue._common import as_options, load_mapping_file
from sparkmark.glue.hive import hive_files, storage_properties as _storage_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG_ENV = "SPARKMARK_GLUE_CATALOG"
FILE_KEYS = ("path", "paths", "format", "format_options", "options", "columns",
             "partition_keys")
JDBC_KEYS = ("url", "table", "dbtable", "driver", "user", "password", "password_env",
             "properties", "options", "columns", "connection")
CONNECTION_KEYS = ("url", "user", "password", "password_env", "driver", "properties")
_GLUE_CONNECTION_NAMES = {"JDBC_CONNECTION_URL": "url", "USERNAME": "user",
                          "PASSWORD": "password", "JDBC_DRIVER_CLASS_NAME": "driver"}
CONNECTIONS = "connections"
ICEBERG_KEYS = ("format", "table", "options")
DELTA_KEYS = ("format", "table", "path", "options")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TABLE_NAME = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`))+")


@dataclass(frozen=True)
class CatalogTable:
    """Where ``database.table`` lives: ``kind`` is ``files``, ``jdbc``, ``iceberg`` (an Apache
    Iceberg table: ``table`` is its name in a Spark catalog), ``delta`` (a Delta Lake table:
    ``table`` is its name, or ``paths`` holds its location) or ``spark`` (a view or a table
    Spark reads but sparkmark cannot bookmark).

    Example: ``CatalogTable(name="db.t", kind="iceberg", source="test", table="local.db.t")``
    """

    name: str
    kind: str
    source: str                                   # "Spark catalog" or the mapping file
    paths: tuple[str, ...] = ()
    format: str | None = None
    format_options: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    url: str | None = None
    table: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    detail: str | None = None
    columns: tuple[tuple[str, str], ...] = ()     # (Name, Type) from the mapping entry


@dataclass(frozen=True)
class Connection:
    """A Glue connection from the mapping file's ``connections`` section.

        conn = connection("pg-prod")        # env SPARKMARK_GLUE_CATALOG
        conn.url, conn.properties["user"]
    """

    name: str
    url: str
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def vendor(self) -> str:
        """``postgresql`` for ``jdbc:postgresql://...``.

            connection("pg").vendor  # "postgresql"
        """
        return self.url.split(":", 2)[1].lower()

    def url_for(self, database: str | None) -> str:
        """The URL with its database replaced (``from_jdbc_conf``'s ``database`` option).

            connection("pg").url_for("sales")
        """
        if not database:
            return self.url
        head, sep, query = self.url.partition("?")
        scheme, _, rest = head.partition("://")
        if not _:
            raise ConfigError(f"connection {self.name!r}: cannot put database {database!r} "
                              f"into URL {self.url.split('?')[0]!r}; give the full URL of the "
                              "database as a connection of its own")
        host = rest.split("/", 1)[0]
        return f"{scheme}://{host}/{database}" + (sep + query if sep else "")

    @property
    def base_url(self) -> str:
        """The URL without its database, as Glue's ``extract_jdbc_conf`` returns ``url``.

            connection("pg").base_url  # "jdbc:postgresql://db:5432"
        """
        head = self.url.split("?")[0]
        scheme, sep, rest = head.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}" if sep else head


def _credentials(where: str, entry: Mapping[str, Any], props: dict[str, Any],
                 env: Mapping[str, str]) -> None:
    for k in ("driver", "user", "password"):
        if entry.get(k) is not None:
            props[k] = entry[k]
    var = entry.get("password_env")
    if var is not None:
        if not isinstance(var, str) or not var:
            raise ConfigError(f"{where}: password_env must name an environment variable")
        if var not in env:
            raise ConfigError(f"{where}: the password comes from env {var}, which is not set; "
                              f"export {var}=... before running the job")
        props["password"] = env[var]


def _columns(where: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise ConfigError(f"{where}: columns must be a list of {{Name, Type}} objects (Glue's "
                          "StorageDescriptor.Columns)")
    out = []
    for c in raw:
        if not isinstance(c, Mapping):
            raise ConfigError(f"{where}: column {c!r} must be an object {{Name, Type}}")
        low = {str(k).lower(): v for k, v in c.items()}
        name, typ = low.get("name"), low.get("type")
        if not isinstance(name, str) or not name or not isinstance(typ, str) or not typ:
            raise ConfigError(f"{where}: column {dict(c)!r} needs a Name and a Type "
                              "(e.g. {\"Name\": \"id\", \"Type\": \"bigint\"})")
        from sparkmark.glue.fields import glue_type
        glue_type(typ, f"{where}: column {name!r}")
        out.append((name, typ))
    return tuple(out)


def parse_connection(name: str, entry: Any, source: str,
                     env: Mapping[str, str] | None = None) -> Connection:
    """Validate one entry of the ``connections`` section (pure but for env).

        parse_connection("pg", {"url": "jdbc:postgresql://db/hr", "user": "etl"}, "test")
    """
    env = os.environ if env is None else env
    where = f"catalog mapping {source}, connection {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be an object with url, user, password")
    entry = {_GLUE_CONNECTION_NAMES.get(str(k), str(k)): v for k, v in entry.items()}
    unknown = sorted(set(entry) - set(CONNECTION_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; use {', '.join(CONNECTION_KEYS)}")
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith("jdbc:"):
        raise ConfigError(f"{where}: url must be a JDBC URL such as "
                          "jdbc:postgresql://host:5432/db")
    props = as_options(entry.get("properties"), f"{where}: properties")
    _credentials(where, entry, props, env)
    return Connection(name=name, url=url, properties={str(k): str(v) for k, v in props.items()})


def _check_name(database: Any, table_name: Any) -> str:
    for what, v in (("database", database), ("table_name", table_name)):
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"from_catalog needs a non-empty {what} (got {v!r})")
    return f"{database.strip()}.{table_name.strip()}"


def parse_entry(name: str, entry: Any, source: str, base_dir: str | None = None,
                connections: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None) -> CatalogTable:
    """Validate one mapping-file entry (pure but for env ``password_env``).

        parse_entry("db.t", {"path": "s3://b/t", "format": "csv"}, "test")
    """
    env = os.environ if env is None else env
    where = f"catalog mapping {source}, entry {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be an object with path/format or url/table, not "
                          f"{type(entry).__name__}")
    entry = dict(entry)
    table_format = str(entry.get("format") or "").strip().lower()
    if table_format in ("iceberg", "delta"):
        return _table_entry(name, entry, source, where, table_format)
    columns = _columns(where, entry.get("columns"))
    if "connection" in entry:
        conn_name = entry["connection"]
        found = find_in_mapping(dict(connections or {}), str(conn_name))
        if found is None:
            raise ConfigError(f"{where}: connection {conn_name!r} is not in the "
                              f"'{CONNECTIONS}' section; add it there")
        conn = parse_connection(str(conn_name), found, source, env)
        if "url" in entry:
            raise ConfigError(f"{where}: give 'connection' or 'url', not both")
        entry = {**entry, "url": conn.url}
        entry.pop("connection")
        base_props = dict(conn.properties)
    else:
        base_props = {}
    if "url" in entry:
        unknown = sorted(set(entry) - set(JDBC_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown} for a JDBC table; use "
                              f"{', '.join(JDBC_KEYS)}")
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith("jdbc:"):
            raise ConfigError(f"{where}: url must be a JDBC URL such as "
                              "jdbc:postgresql://host:5432/db")
        table = entry.get("table", entry.get("dbtable"))
        if not isinstance(table, str) or not table.strip():
            raise ConfigError(f"{where}: a JDBC entry needs 'table' (the table in the database, "
                              "optionally schema.table)")
        props = {**base_props, **as_options(entry.get("properties"), f"{where}: properties")}
        _credentials(where, entry, props, env)
        return CatalogTable(name=name, kind="jdbc", source=source, url=url, table=table.strip(),
                            properties={str(k): str(v) for k, v in props.items()},
                            options=as_options(entry.get("options"), f"{where}: options"),
                            columns=columns)
    unknown = sorted(set(entry) - set(FILE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; a file table has "
                          f"{', '.join(FILE_KEYS)} and a JDBC table has {', '.join(JDBC_KEYS)}")
    raw = entry.get("paths", entry.get("path"))
    paths = [raw] if isinstance(raw, str) else raw
    if (not isinstance(paths, (list, tuple)) or not paths
            or any(not isinstance(p, str) or not p.strip() for p in paths)):
        raise ConfigError(f"{where}: give 'path' (a folder or s3:// URI) or 'url' (a JDBC table)")
    fmt = entry.get("format")
    if not isinstance(fmt, str) or not fmt.strip():
        raise ConfigError(f"{where}: give 'format' (csv, json, parquet, orc, avro, xml)")
    resolved = []
    for p in paths:
        p = p.strip()
        if "://" not in p and not p.startswith("file:") and not os.path.isabs(p):
            p = os.path.normpath(os.path.join(base_dir or os.getcwd(), p))
        resolved.append(p)
    return CatalogTable(name=name, kind="files", source=source, paths=tuple(resolved),
                        format=fmt.strip().lower(),
                        format_options=as_options(entry.get("format_options"),
                                             f"{where}: format_options"),
                        options=as_options(entry.get("options"), f"{where}: options"),
                        columns=columns)


def _table_entry(name: str, entry: dict[str, Any], source: str, where: str,
                 kind: str) -> CatalogTable:
    """``{"format": "iceberg", "table": "local.db.orders"}`` (a table of an Iceberg catalog)
    or ``{"format": "delta", "path": "s3://lake/events"}`` / ``{"format": "delta", "table":
    "lake.events"}``: bookmarked by snapshot or version, written exactly once."""
    label, a, keys = ("Iceberg", "an", ICEBERG_KEYS) if kind == "iceberg" else \
        ("Delta", "a", DELTA_KEYS)
    unknown = sorted(set(entry) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown} for {a} {label} table; use "
                          f"{', '.join(keys)}")
    table, path = entry.get("table"), entry.get("path")
    if kind == "delta" and (table is None) == (path is None):
        raise ConfigError(f"{where}: a Delta entry needs one of 'table' (its name in a Spark "
                          "catalog, such as lake.events) or 'path' (its location)")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise ConfigError(f"{where}: 'path' must be the Delta table's location (got {path!r})")
    if path is None and (not isinstance(table, str) or not _TABLE_NAME.fullmatch(table.strip())):
        raise ConfigError(f"{where}: {a} {label} entry needs 'table', the table's name in a "
                          f"Spark catalog such as local.db.orders (got {table!r})")
    return CatalogTable(name=name, kind=kind, source=source,
                        table=table.strip() if isinstance(table, str) else None,
                        paths=(path.strip(),) if isinstance(path, str) else (),
                        options=as_options(entry.get("options"), f"{where}: options"),
                        detail="an Apache Iceberg table" if kind == "iceberg"
                        else "a Delta Lake table")


def find_in_mapping(data: Mapping[str, Any], name: str) -> Any:
    """The entry for ``name`` (exact key first, then case-insensitively), or ``None``."""
    if name in data:
        return data[name]
    matches = [k for k in data if isinstance(k, str) and k.lower() == name.lower()]
    if len(matches) > 1:
        raise ConfigError(f"the catalog mapping has several entries for {name!r} that differ "
                          f"only in case ({matches}); keep one")
    return data[matches[0]] if matches else None


def _spark_table(spark: "SparkSession", database: str, table: str) -> CatalogTable | None:
    qualified = f"`{database.replace('`', '``')}`.`{table.replace('`', '``')}`"
    try:
        if not spark.catalog.tableExists(qualified):
            return None
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {qualified}").collect()
    except Exception:  # noqa: BLE001 - an unknown database is "not in the catalog"
        return None
    info = {r[0]: r[1] for r in rows if r[0]}
    name = f"{database}.{table}"
    provider = str(info.get("Provider") or "").lower()
    location = info.get("Location")
    kind_type = str(info.get("Type") or "").upper()
    if provider in ("csv", "json", "parquet", "orc", "avro", "xml", "text") and location:
        return CatalogTable(name=name, kind="files", source="the Spark catalog",
                            paths=(location,), format=provider,
                            format_options=_storage_properties(info.get("Storage Properties")))
    hive = hive_files(info) if provider == "hive" and location else None
    if hive is not None:  # e.g. a Glue crawler's table: bookmarked as its files
        fmt, options = hive
        columns = tuple((str(c.name), str(c.dataType))
                        for c in spark.catalog.listColumns(qualified))
        return CatalogTable(name=name, kind="files", source="the Spark catalog",
                            paths=(str(location),), format=fmt, format_options=options,
                            columns=columns, detail=HIVE_TABLE)
    if provider == "iceberg":
        plain = all(_PLAIN.fullmatch(x) for x in (database, table))
        return CatalogTable(name=name, kind="iceberg", source="the Spark catalog",
                            table=f"{database}.{table}" if plain else qualified,
                            detail="an Apache Iceberg table")
    if provider == "delta":
        plain = all(_PLAIN.fullmatch(x) for x in (database, table))
        return CatalogTable(name=name, kind="delta", source="the Spark catalog",
                            table=f"{database}.{table}" if plain else qualified,
                            detail="a Delta Lake table")
    detail = "a view" if kind_type == "VIEW" else f"a {provider or kind_type.lower()} table"
    return CatalogTable(name=name, kind="spark", source="the Spark catalog", table=qualified,
                        detail=detail)


#: ``CatalogTable.detail`` of a Hive table read as its files
HIVE_TABLE = "a Hive table"


def lookup(spark: "SparkSession", database: Any, table_name: Any,
           env: Mapping[str, str] | None = None) -> CatalogTable:
    """Find ``database.table_name``: the Spark catalog, then ``SPARKMARK_GLUE_CATALOG``.

        lookup(spark, "hr", "emp").kind  # "jdbc"
    """
    name = _check_name(database, table_name)
    found = _spark_table(spark, database.strip(), table_name.strip())
    if found is not None:
        return found
    env = os.environ if env is None else env
    file = env.get(CATALOG_ENV)
    if not file:
        raise SourceError(
            f"table {name} is not in the Spark catalog and env {CATALOG_ENV} is not set; "
            f"set {CATALOG_ENV} to a JSON or YAML file mapping {name!r} to "
            '{"path": ..., "format": ...} or {"url": "jdbc:...", "table": ...}')
    data = load_mapping_file(file, "catalog mapping", CATALOG_ENV)
    entry = find_in_mapping({k: v for k, v in data.items() if k != CONNECTIONS}, name)
    if entry is None:
        known = ", ".join(sorted(str(k) for k in data if k != CONNECTIONS)[:20]) or "none"
        raise SourceError(f"table {name} is neither in the Spark catalog nor in the catalog "
                          f"mapping {file!r} (it has: {known}); add an entry for {name!r}")
    return parse_entry(name, entry, repr(file), os.path.dirname(os.path.abspath(file)),
                       connections=_connections_section(data, file), env=env)


def _connections_section(data: Mapping[str, Any], file: str) -> dict[str, Any]:
    section = data.get(CONNECTIONS) or {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"catalog mapping {file!r}: '{CONNECTIONS}' must be an object of "
                          "connection name to {url, user, password}")
    return dict(section)


def connection(name: Any, env: Mapping[str, str] | None = None) -> Connection:
    """The Glue connection ``name`` from the mapping file's ``connections`` section.

        connection("pg-prod").url_for("hr")   # jdbc:postgresql://db:5432/hr
    """
    env = os.environ if env is None else env
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a Glue connection name must be a non-empty string, not {name!r}")
    file = env.get(CATALOG_ENV)
    if not file:
        raise ConfigError(f"Glue connection {name!r}: env {CATALOG_ENV} is not set; set it to a "
                          f"JSON or YAML file with a '{CONNECTIONS}' section, e.g. "
                          f'{{"{CONNECTIONS}": {{"{name}": {{"url": "jdbc:postgresql://'
                          'host:5432/db", "user": "...", "password_env": "PGPASSWORD"}}}}')
    data = load_mapping_file(file, "catalog mapping", CATALOG_ENV)
    section = _connections_section(data, file)
    entry = find_in_mapping(section, name.strip())
    if entry is None:
        raise ConfigError(f"Glue connection {name!r} is not in the '{CONNECTIONS}' section of "
                          f"the catalog mapping {file!r} (it has: "
                          f"{', '.join(sorted(section)) or 'none'}); add it there")
    return parse_connection(name.strip(), entry, repr(file), env)


def _server_of(url: str) -> str:
    """``jdbc:mysql://host:3306`` for any URL of that server (database and query dropped)."""
    scheme, sep, rest = url.split("?")[0].partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}" if sep else url.lower()


def connection_driver(url: str, env: Mapping[str, str] | None = None) -> str | None:
    """The ``driver`` of the Glue connection(s) whose URL names the same server as ``url``
    (scheme, host and port), or None (no mapping file, no such connection, no driver given,
    or connections to that server disagree).  Scripts that build ``connection_options`` from
    ``extract_jdbc_conf(name)`` pass ``url``, ``user`` and ``password`` but not the driver; this
    gives their reads and writes the connection's driver all the same.

        connection_driver("jdbc:mysql://127.0.0.1:3306/shop")   # 'org.mariadb.jdbc.Driver'
    """
    env = os.environ if env is None else env
    file = env.get(CATALOG_ENV)
    if not file:
        return None
    section = _connections_section(load_mapping_file(file, "catalog mapping", CATALOG_ENV),
                                   file)
    server = _server_of(url)
    drivers = set()
    for entry in section.values():
        if not isinstance(entry, Mapping):
            continue
        entry = {_GLUE_CONNECTION_NAMES.get(str(k), str(k)): v for k, v in entry.items()}
        curl = entry.get("url")
        if not isinstance(curl, str) or _server_of(curl) != server:
            continue
        raw = entry.get("properties")
        props: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        driver = entry.get("driver") or {str(k).lower(): v for k, v in props.items()}.get(
            "driver")
        if driver:
            drivers.add(str(driver))
    return drivers.pop() if len(drivers) == 1 else None


def column_types(table: CatalogTable, spark: "SparkSession") -> dict[str, Any]:
    """``{name: Spark type}`` of a catalog table's columns (mapping file or Spark catalog).

        column_types(lookup(spark, "db", "t"), spark)  # {"id": LongType()}
    """
    from sparkmark.glue.fields import glue_type
    if table.columns:
        out = {}
        for name, typ in table.columns:
            t = glue_type(typ, f"table {table.name}, column {name!r}")
            if t is not None:
                out[name] = t
        return out
    if table.source == "Spark catalog" and table.table:
        return {f.name: f.dataType for f in spark.table(table.table).schema.fields}
    return {}


def apply_columns(df: Any, table: CatalogTable, positional: bool) -> Any:
    """A read of ``table`` with its catalog ``columns``: headerless CSV columns (``col0``...)
    renamed by position, every column cast to its type, absent ones added as nulls, in the
    catalog's order (other columns follow)."""
    if not table.columns:
        return df
    from pyspark.sql import functions as F
    from sparkmark.glue.fields import glue_type, quote, try_cast
    if positional:
        renames = {f"col{i}": name for i, (name, _) in enumerate(table.columns)
                   if f"col{i}" in df.columns}
        if renames:
            df = df.withColumnsRenamed(renames)
    have = {c.lower(): c for c in df.columns}
    cols, used = [], set()
    for name, typ in table.columns:
        dtype = glue_type(typ, f"table {table.name}, column {name!r}")
        actual = have.get(name.lower())
        if actual is None:
            from pyspark.sql.types import StringType
            cols.append(F.lit(None).cast(dtype or StringType()).alias(name))
            continue
        used.add(actual)
        ref = df[quote(actual)]
        if dtype is not None and df.schema[actual].dataType != dtype:
            ref = try_cast(ref, dtype)
        cols.append(ref.alias(name))
    cols += [df[quote(c)] for c in df.columns if c not in used]
    return df.select(*cols)


def register_table(spark: "SparkSession", database: Any, table_name: Any, *, path: str,
                   fmt: str, columns: list[tuple[str, str]], partition_keys: list[str],
                   update_schema: bool, env: Mapping[str, str] | None = None) -> str:
    """``getSink(enableUpdateCatalog=True)``: add or update ``database.table_name``.

    With env ``SPARKMARK_GLUE_CATALOG`` the entry is written to that file (created if missing;
    an existing entry keeps its other keys; ``update_schema=False`` keeps its columns), else the
    table is created in the Spark catalog.  Returns where it went.
    """
    import json
    import tempfile
    name = _check_name(database, table_name)
    env = os.environ if env is None else env
    file = env.get(CATALOG_ENV)
    if not file:
        db, tb = database.strip(), table_name.strip()
        q = f"`{db.replace('`', '``')}`.`{tb.replace('`', '``')}`"
        spark.sql(f"CREATE DATABASE IF NOT EXISTS `{db.replace('`', '``')}`")
        if not spark.catalog.tableExists(q):
            loc = path.replace("'", "\\'")
            spark.sql(f"CREATE TABLE {q} USING {fmt} LOCATION '{loc}'")
        return "Spark catalog"
    data = load_mapping_file(file, "catalog mapping", CATALOG_ENV) if os.path.exists(file) \
        else {}
    key = next((k for k in data if isinstance(k, str) and k.lower() == name.lower()), name)
    entry = dict(data.get(key) or {})
    entry.update(path=path, format=fmt)
    if update_schema or "columns" not in entry:
        entry["columns"] = [{"Name": n, "Type": t} for n, t in columns]
    if partition_keys:
        entry["partition_keys"] = list(partition_keys)
    data[key] = entry
    lower = file.lower()
    if lower.endswith((".yaml", ".yml")):
        import yaml
        text = yaml.safe_dump(data, sort_keys=False)
    else:
        text = json.dumps(data, indent=2)
    folder = os.path.dirname(os.path.abspath(file))
    fd, tmp = tempfile.mkstemp(prefix=".catalog-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, file)  # readers see the old file or the new one, never half of it
    return repr(file)
