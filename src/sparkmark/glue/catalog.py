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
has ``url`` and ``table`` (or ``dbtable``), optional ``driver``, ``user``, ``password`` and
``properties`` (more JDBC connection properties).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigError, SourceError
from ._common import as_options, load_mapping_file

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG_ENV = "SPARKMARK_GLUE_CATALOG"
FILE_KEYS = ("path", "paths", "format", "format_options", "options")
JDBC_KEYS = ("url", "table", "dbtable", "driver", "user", "password", "properties", "options")


@dataclass(frozen=True)
class CatalogTable:
    """Where ``database.table`` lives: ``kind`` is ``files``, ``jdbc`` or ``spark`` (a view or
    a table Spark reads but sparkmark cannot bookmark)."""

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


def _check_name(database: Any, table_name: Any) -> str:
    for what, v in (("database", database), ("table_name", table_name)):
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"from_catalog needs a non-empty {what} (got {v!r})")
    return f"{database.strip()}.{table_name.strip()}"


def parse_entry(name: str, entry: Any, source: str, base_dir: str | None = None) -> CatalogTable:
    """Validate one mapping-file entry (pure)."""
    where = f"catalog mapping {source}, entry {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be an object with path/format or url/table, not "
                          f"{type(entry).__name__}")
    entry = dict(entry)
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
        props = as_options(entry.get("properties"), f"{where}: properties")
        for k in ("driver", "user", "password"):
            if entry.get(k) is not None:
                props[k] = entry[k]
        return CatalogTable(name=name, kind="jdbc", source=source, url=url, table=table.strip(),
                            properties={str(k): str(v) for k, v in props.items()},
                            options=as_options(entry.get("options"), f"{where}: options"))
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
                        options=as_options(entry.get("options"), f"{where}: options"))


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
    detail = "a view" if kind_type == "VIEW" else f"a {provider or kind_type.lower()} table"
    return CatalogTable(name=name, kind="spark", source="the Spark catalog", table=qualified,
                        detail=detail)


def _storage_properties(text: Any) -> dict[str, str]:
    """``[header=true, sep=;]`` -> ``{"header": "true", "sep": ";"}``."""
    text = str(text or "").strip()
    if not (text.startswith("[") and text.endswith("]")):
        return {}
    out = {}
    for part in text[1:-1].split(", "):
        if "=" in part:
            k, v = part.split("=", 1)
            if k.strip().lower() not in ("path", "paths"):  # the location is read separately
                out[k.strip()] = v
    return out


def lookup(spark: "SparkSession", database: Any, table_name: Any,
           env: Mapping[str, str] | None = None) -> CatalogTable:
    """Find ``database.table_name``: the Spark catalog, then ``SPARKMARK_GLUE_CATALOG``."""
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
    entry = find_in_mapping(data, name)
    if entry is None:
        known = ", ".join(sorted(str(k) for k in data)[:20]) or "none"
        raise SourceError(f"table {name} is neither in the Spark catalog nor in the catalog "
                          f"mapping {file!r} (it has: {known}); add an entry for {name!r}")
    return parse_entry(name, entry, repr(file), os.path.dirname(os.path.abspath(file)))
