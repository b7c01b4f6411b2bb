"""Hive tables (a Glue crawler's, say) read as their files: the file format and Spark reader
options from what ``DESCRIBE TABLE EXTENDED`` says of the table.

    hive_files({"Serde Library": "org.openx.data.jsonserde.JsonSerDe"})   # ("json", {})
"""
from __future__ import annotations

from typing import Any, Mapping


def hive_files(info: Mapping[str, Any]) -> tuple[str, dict[str, str]] | None:
    """The file format and Spark reader options of a Hive table (a Glue crawler's, say) from
    ``DESCRIBE TABLE EXTENDED``'s ``Serde Library``, ``InputFormat``, ``Storage Properties``
    and ``Table Properties``; None for a SerDe sparkmark cannot read as files.  Delimited text
    (``LazySimpleSerDe``) is CSV with the table's delimiter and no quoting; ``OpenCSVSerde`` is
    CSV with its separator, quote and escape; ``skip.header.line.count=1`` is a header line.

    >>> hive_files({"Serde Library": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
    ...             "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
    ...             "Storage Properties": "[serialization.format=,, field.delim=,]",
    ...             "Table Properties": "[skip.header.line.count=1]"})
    ('csv', {'sep': ',', 'quote': '', 'header': 'true'})
    >>> hive_files({"Serde Library": "org.openx.data.jsonserde.JsonSerDe"})
    ('json', {})
    >>> hive_files({"Serde Library": "com.example.MySerDe"}) is None
    True
    """
    serde = str(info.get("Serde Library") or "").lower()
    input_format = str(info.get("InputFormat") or "").lower()
    storage = storage_properties(info.get("Storage Properties"))
    table_props = storage_properties(info.get("Table Properties"))
    header = {"header": "true"} if table_props.get("skip.header.line.count") == "1" else {}
    for word in ("parquet", "orc", "avro"):
        if word in serde or word in input_format:
            return word, {}
    if "jsonserde" in serde:
        return "json", {}
    if serde.endswith(".opencsvserde"):
        opts = {"sep": storage.get("separatorChar", ","), "quote": storage.get("quoteChar", '"'),
                "escape": storage.get("escapeChar", "\\")}
        return "csv", {**opts, **header}
    if serde.endswith(".lazysimpleserde") and "textinputformat" in input_format:
        sep = storage.get("field.delim") or storage.get("serialization.format") or "\x01"
        opts = {"sep": "\x01" if sep == "1" else sep, "quote": ""}
        if storage.get("escape.delim"):
            opts["escape"] = storage["escape.delim"]
        return "csv", {**opts, **header}
    return None


def storage_properties(text: Any) -> dict[str, str]:
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
