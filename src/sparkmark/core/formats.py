"""The file formats sparkmark reads and writes: one list each, used by sources, sinks, pipelines
and the Glue layer.

    >>> from sparkmark.core.formats import READ_FORMATS, WRITE_FORMATS
    >>> "avro" in READ_FORMATS, "avro" in WRITE_FORMATS
    (True, False)
"""
from __future__ import annotations

#: formats ``job.read.files`` reads
READ_FORMATS: tuple[str, ...] = ("json", "csv", "parquet", "orc", "avro", "xml", "text")
#: formats whose records are parsed from text (read with ``mode=FAILFAST`` unless told otherwise)
PARSED_FORMATS: tuple[str, ...] = ("json", "csv", "xml")
#: formats the exactly-once file sink writes (``job.write``, pipeline targets)
WRITE_FORMATS: tuple[str, ...] = ("parquet", "orc", "json", "csv")
