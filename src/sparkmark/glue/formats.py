"""Glue's ``format`` / ``format_options`` translated to Spark reader and writer options (pure).

Glue's option names (``withHeader``, ``separator``, ``quoteChar``, ``escaper``, ...) are mapped to
Spark's; any other name is handed to Spark as it is, so Spark's own options work too.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from sparkmark.core.errors import ConfigError
from sparkmark.glue._common import GlueUnsupportedError, as_options, unsupported_message

READ_FORMATS = ("csv", "json", "parquet", "orc", "avro", "xml", "text")
WRITE_FORMATS = ("csv", "json", "parquet", "orc")
_FORMAT_ALIASES = {"glueparquet": "parquet"}
_UNSUPPORTED_FORMATS = {
    "ion": "convert the data to JSON first",
    "groklog": "read the files with format 'text' and parse them with regexp_extract",
    "hudi": "use Spark's Hudi connector directly",
    "delta": "use Delta Lake's reader directly",
    "iceberg": "use Spark's Iceberg connector directly",
}
#: Glue name (lower case) -> Spark name
_RENAME = {
    "csv": {"separator": "sep", "escaper": "escape", "quotechar": "quote",
            "withheader": "header", "writeheader": "header", "multiline": "multiLine"},
    "json": {"multiline": "multiLine"},
    "xml": {"rowtag": "rowTag"},
}
#: Glue performance hints with no effect on the result: accepted and ignored
_IGNORED = {"optimizeperformance", "useglueparquetwriter", "blocksize", "pagesize", "version",
            "strictcheckingofcolumncount"}
_UNSUPPORTED_OPTIONS = {
    "jsonpath": "read the JSON and select the fields with the DataFrame API (frame.toDF())",
    "withschema": "give Spark's 'schema' option (a DDL string such as 'a STRING, b INT')",
    "skipfirst": "use withHeader: true (the first line then names the columns)",
}
_POSITIONAL = re.compile(r"^_c(\d+)$")


def glue_format(fmt: Any, *, write: bool = False) -> str:
    """Glue's format name as the Spark format sparkmark reads or writes.

        glue_format("glueparquet", write=True)  # "parquet"
    """
    name = str(fmt or "").strip().lower()
    name = _FORMAT_ALIASES.get(name, name)
    if name in _UNSUPPORTED_FORMATS:
        raise GlueUnsupportedError(unsupported_message(f"format {fmt!r}",
                                                       _UNSUPPORTED_FORMATS[name]))
    allowed = WRITE_FORMATS if write else READ_FORMATS
    if name not in allowed:
        raise ConfigError(f"unknown {'sink' if write else 'source'} format {fmt!r}; use one of "
                          f"{', '.join(allowed)}")
    return name


def _options(fmt: str, format_options: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    format_options = as_options(format_options, what)
    out: dict[str, Any] = {}
    renames = _RENAME.get(fmt, {})
    for key, value in format_options.items():
        low = str(key).lower()
        if low in _UNSUPPORTED_OPTIONS:
            raise GlueUnsupportedError(unsupported_message(f"{what} {key!r}",
                                                           _UNSUPPORTED_OPTIONS[low]))
        if low in _IGNORED:
            continue
        name = renames.get(low, str(key))
        if fmt == "csv" and name == "quote" and str(value) == "-1":
            value = ""  # Glue: quoteChar -1 turns quoting off
        if isinstance(value, bool):
            value = str(value).lower()
        out[name] = value
    return out


def reader_options(fmt: str, format_options: Mapping[str, Any] | None) -> tuple[dict, bool]:
    """Spark reader options, and whether headerless CSV columns must be named col0, col1, ...

        reader_options("csv", {"withHeader": True})  # ({"header": "true", ...}, False)
    """
    opts = _options(fmt, format_options, "format_options")
    positional = fmt == "csv" and str(opts.get("header", "false")).lower() != "true"
    return opts, positional


def writer_options(fmt: str, format_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Spark writer options; CSV gets a header line unless ``writeHeader`` is false (Glue).

        writer_options("csv", {"separator": "|"})  # {"sep": "|", "header": "true"}
    """
    opts = _options(fmt, format_options, "format_options")
    if fmt == "csv":
        opts.setdefault("header", "true")
    return opts


def glue_column_names(columns: list[str]) -> dict[str, str]:
    """Spark's ``_c0, _c1`` -> Glue's classifier names ``col0, col1`` (other names stay).

        glue_column_names(["_c0", "x"])  # {"_c0": "col0"}
    """
    return {c: f"col{m.group(1)}" for c in columns if (m := _POSITIONAL.match(c))}
