"""Avro without the spark-avro jar: a Python data source (Spark 4, ``pyspark.sql.datasource``)
built on fastavro.

``read_files(..., format="avro")`` uses Spark's own ``avro`` format when spark-avro is on the
classpath and this data source otherwise.  Spark plans it on the driver and runs ``read`` in
Python workers on the executors, one input partition per group of files; every worker opens its
files itself, so the files must be reachable from the executors under the same path (local
paths in local mode, a shared mount on a cluster).  Hadoop-only schemes (``hdfs:``, ``s3a:``...)
need spark-avro.

Options (all strings): ``paths`` (JSON list of files), ``basePath`` (root of a partitioned
layout: ``key=value`` directories below it become columns), ``numPartitions``, and ``schema``
(Spark's JSON schema; default: the Avro schema of the first file).

Type mapping: Avro primitives to their Spark types, records to structs, arrays, maps (string
keys), enums to strings, fixed to binary, ``["null", T]`` unions to a nullable ``T``, logical
types date, timestamp-millis/micros, decimal and uuid.  Other unions are rejected with a clear
error (use spark-avro for those).
"""
from __future__ import annotations

import json
from typing import Any, Iterator
from urllib.parse import unquote

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType,
                               NullType, StringType, StructField, StructType, TimestampType)

NAME = "sparkmark_avro"


class AvroSchemaError(ValueError):
    """An Avro schema that this fallback reader cannot map to Spark types."""


def local_path(path: str) -> str:
    """``file:/x/y`` or ``file:///x/y`` to ``/x/y``; a plain path stays as it is."""
    if path.startswith("file:"):
        rest = path[5:]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):  # file://host/path
                rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return unquote(rest) if "%" in rest else rest
    return path


def avro_to_spark(schema: Any) -> tuple[DataType, bool]:
    """Map a (parsed) Avro schema to a Spark type and whether it is nullable."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return avro_to_spark(branches[0])[0], True
        if not branches:
            return NullType(), True
        raise AvroSchemaError(f"the Avro union {schema} has more than one non-null branch")
    if isinstance(schema, dict):
        logical = schema.get("logicalType")
        t = schema.get("type")
        if logical == "date" and t == "int":
            return DateType(), False
        if logical in ("timestamp-millis", "timestamp-micros") and t == "long":
            return TimestampType(), False
        if logical == "decimal" and t in ("bytes", "fixed"):
            return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), False
        if t == "record":
            return StructType([StructField(f["name"], *avro_to_spark(f["type"]))
                               for f in schema["fields"]]), False
        if t == "array":
            item, nullable = avro_to_spark(schema["items"])
            return ArrayType(item, nullable), False
        if t == "map":
            value, nullable = avro_to_spark(schema["values"])
            return MapType(StringType(), value, nullable), False
        if t == "enum":
            return StringType(), False
        if t == "fixed":
            return BinaryType(), False
        return avro_to_spark(t)
    primitives = {"null": NullType(), "boolean": BooleanType(), "int": IntegerType(),
                  "long": LongType(), "float": FloatType(), "double": DoubleType(),
                  "bytes": BinaryType(), "string": StringType()}
    if schema in primitives:
        return primitives[schema], schema == "null"
    raise AvroSchemaError(f"unsupported Avro type {schema!r}")


def file_schema(path: str) -> StructType:
    """The Spark schema of one Avro file, from its header."""
    import fastavro
    with open(local_path(path), "rb") as fo:
        writer_schema = fastavro.reader(fo).writer_schema
    dtype, _ = avro_to_spark(writer_schema)
    if not isinstance(dtype, StructType):
        return StructType([StructField("value", dtype, True)])
    return dtype


def partition_values(path: str, base: str | None) -> list[tuple[str, str]]:
    """``key=value`` directories between ``base`` and the file, outermost first."""
    if not base:
        return []
    base = base.rstrip("/")
    if not path.startswith(base + "/"):
        return []
    parts = path[len(base) + 1:].split("/")[:-1]
    out = []
    for part in parts:
        if "=" not in part:
            return []
        k, v = part.split("=", 1)
        out.append((unquote(k), unquote(v)))
    return out


def _partition_type(values: list[str]) -> DataType:
    def is_int(v: str) -> bool:
        try:
            int(v)
            return True
        except ValueError:
            return False
    if values and all(is_int(v) for v in values):
        return (IntegerType() if all(-2**31 <= int(v) < 2**31 for v in values) else LongType())
    return StringType()


def partition_schema(paths: list[str], base: str | None) -> StructType:
    columns: dict[str, list[str]] = {}
    for p in paths:
        for k, v in partition_values(p, base):
            columns.setdefault(k, []).append(v)
    return StructType([StructField(k, _partition_type(v), True) for k, v in columns.items()])


class AvroDataSource(DataSource):
    """``spark.read.format("sparkmark_avro").option("paths", json_list).load()``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _paths(self) -> list[str]:
        return list(json.loads(self.options.get("paths", "[]")))

    def schema(self) -> StructType:
        given = self.options.get("schema")
        if given:
            return StructType.fromJson(json.loads(given))
        paths = self._paths()
        if not paths:
            return StructType([])
        data = file_schema(paths[0])
        parts = partition_schema(paths, self.options.get("basePath"))
        names = {f.name for f in data.fields}
        return StructType(list(data.fields) + [f for f in parts.fields if f.name not in names])

    def reader(self, schema: StructType) -> "AvroReader":
        return AvroReader(schema, self._paths(), self.options.get("basePath"),
                          int(self.options.get("numPartitions", "0") or 0))


class AvroReader(DataSourceReader):
    def __init__(self, schema: StructType, paths: list[str], base: str | None, parts: int):
        self.schema = schema
        self.paths = paths
        self.base = base
        self.parts = parts

    def partitions(self) -> list[InputPartition]:
        n = max(1, min(len(self.paths), self.parts or len(self.paths)))
        groups: list[list[str]] = [[] for _ in range(n)]
        for i, p in enumerate(self.paths):
            groups[i % n].append(p)
        return [InputPartition(g) for g in groups if g] or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import fastavro
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        names = self.schema.fieldNames()
        for path in partition.value:
            extra = dict(partition_values(path, self.base))
            with open(local_path(path), "rb") as fo:
                batch: list[dict] = []
                for record in fastavro.reader(fo):
                    row = record if isinstance(record, dict) else {"value": record}
                    if extra:
                        row = {**row, **{k: v for k, v in extra.items() if k not in row}}
                    batch.append({n: _convert(row.get(n), f.dataType)
                                  for n, f in zip(names, self.schema.fields)})
                    if len(batch) >= 4096:
                        yield pa.RecordBatch.from_pylist(batch, schema=arrow_schema)
                        batch = []
                if batch:
                    yield pa.RecordBatch.from_pylist(batch, schema=arrow_schema)


def _convert(value: Any, dtype: DataType) -> Any:
    """fastavro's Python values to what Arrow expects for the Spark type."""
    if value is None:
        return None
    if isinstance(dtype, (IntegerType, LongType)) and isinstance(value, str):
        return int(value)  # partition values
    if isinstance(dtype, StructType):
        if isinstance(value, dict):
            return {f.name: _convert(value.get(f.name), f.dataType) for f in dtype.fields}
        return value
    if isinstance(dtype, ArrayType):
        return [_convert(v, dtype.elementType) for v in value]
    if isinstance(dtype, MapType):
        return [(k, _convert(v, dtype.valueType)) for k, v in value.items()]
    if isinstance(dtype, TimestampType) and getattr(value, "tzinfo", None) is None \
            and hasattr(value, "year") and hasattr(value, "hour"):
        from datetime import timezone
        return value.replace(tzinfo=timezone.utc)
    return value
