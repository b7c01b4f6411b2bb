"""Avro without the spark-avro jar: fastavro in Python workers, through ``mapInArrow``.

``read_files(..., format="avro")`` uses Spark's own ``avro`` format when spark-avro is on the
classpath and :func:`read_avro` otherwise.  It needs nothing newer than Spark 3.5 and runs the
same on 3.5 and 4.x, classic or Spark Connect: ``spark.range(len(paths))`` split into tasks, and
each task opens its own files on an executor and hands Spark Arrow batches.  The files must be
reachable from the executors under the same path (local paths in local mode, a shared mount on
a cluster); Hadoop-only schemes (``hdfs:``, ``s3a:``...) need spark-avro.  Only the selected
files are opened: the driver reads the header of the first one for the schema, the executors
read them all.

Schema: given (a ``StructType``), or the Avro schema of the first file plus the ``key=value``
partition directories below ``basePath`` (int/long when every value is an integer, else string).

Type mapping: Avro primitives to their Spark types, records to structs, arrays, maps (string
keys), enums to strings, fixed to binary, ``["null", T]`` unions to a nullable ``T``, logical
types date, timestamp-millis/micros, decimal and uuid.  Other unions are rejected with a clear
error (use spark-avro for those).
"""
from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import unquote

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType,
                               NullType, ShortType, StringType, StructField, StructType,
                               TimestampNTZType, TimestampType)

BATCH_ROWS = 4096


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


def arrow_type(dtype: DataType) -> Any:
    """The Arrow type Spark expects in ``mapInArrow`` output for ``dtype`` (3.5 and 4.x alike)."""
    import pyarrow as pa
    simple = {BooleanType: pa.bool_(), ByteType: pa.int8(), ShortType: pa.int16(),
              IntegerType: pa.int32(), LongType: pa.int64(), FloatType: pa.float32(),
              DoubleType: pa.float64(), StringType: pa.string(), BinaryType: pa.binary(),
              DateType: pa.date32(), NullType: pa.null(),
              TimestampType: pa.timestamp("us", tz="UTC"),
              TimestampNTZType: pa.timestamp("us")}
    for cls, atype in simple.items():
        if type(dtype) is cls:
            return atype
    if isinstance(dtype, DecimalType):
        return pa.decimal128(dtype.precision, dtype.scale)
    if isinstance(dtype, ArrayType):
        return pa.list_(pa.field("element", arrow_type(dtype.elementType), dtype.containsNull))
    if isinstance(dtype, MapType):
        return pa.map_(arrow_type(dtype.keyType), arrow_type(dtype.valueType))
    if isinstance(dtype, StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType), f.nullable)
                          for f in dtype.fields])
    raise AvroSchemaError(f"the column type {dtype.simpleString()} is not supported by the "
                          "built-in avro reader; use spark-avro or another schema")


def dataframe_schema(paths: list[str], base: str | None, given: StructType | None = None,
                     *, ignore_corrupt: bool = False) -> StructType:
    """The schema of the DataFrame over ``paths``: ``given``, or the first file's Avro schema
    (with ``ignore_corrupt``: the first readable file's) plus the ``key=value`` partition
    columns below ``base``."""
    if given is not None:
        return given
    data = StructType([])
    for path in paths:
        try:
            data = file_schema(path)
            break
        except AvroSchemaError:
            raise
        except Exception:
            if not ignore_corrupt:
                raise
    parts = partition_schema(paths, base)
    names = {f.name for f in data.fields}
    return StructType(list(data.fields) + [f for f in parts.fields if f.name not in names])


def read_avro(spark: Any, paths: list[str], base: str | None = None,
              schema: StructType | None = None, *, num_partitions: int | None = None,
              ignore_corrupt: bool = False) -> Any:
    """A DataFrame of the Avro files ``paths``, read by fastavro in Python workers.

    Spark 3.5 and 4.x, classic and Connect: ``spark.range(len(paths))`` split into
    ``num_partitions`` tasks, and ``mapInArrow`` turns each task's file numbers into the
    records of those files (Arrow batches of 4,096 rows).  The files are opened on the
    executors, under the same path, so they must be reachable there (local paths in local mode,
    a shared mount on a cluster).  With ``ignore_corrupt`` a file that cannot be read ends
    where it breaks (the rows read so far stay), as Spark's ``ignoreCorruptFiles`` does.

    Example::

        df = read_avro(spark, ["file:/data/in/day=1/a.avro"], base="file:/data/in")
    """
    import pyarrow as pa
    schema = dataframe_schema(paths, base, schema, ignore_corrupt=ignore_corrupt)
    arrow_schema = pa.schema([pa.field(f.name, arrow_type(f.dataType), f.nullable)
                              for f in schema.fields])
    if not paths:
        return spark.createDataFrame([], schema)
    n = max(1, min(len(paths), num_partitions or len(paths)))
    files = list(paths)
    names = schema.fieldNames()
    dtypes = [f.dataType for f in schema.fields]

    def records(path: str) -> Iterator[Any]:
        import fastavro
        try:
            with open(local_path(path), "rb") as fo:
                yield from fastavro.reader(fo)
        except Exception:
            if not ignore_corrupt:
                raise

    def read_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        for ids in batches:
            for i in ids.column(0).to_pylist():
                path = files[i]
                extra = dict(partition_values(path, base))
                rows: list[dict] = []
                for record in records(path):
                    row = record if isinstance(record, dict) else {"value": record}
                    if extra:
                        row = {**row, **{k: v for k, v in extra.items() if k not in row}}
                    rows.append({k: _convert(row.get(k), t) for k, t in zip(names, dtypes)})
                    if len(rows) >= BATCH_ROWS:
                        yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)
                        rows = []
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)

    return spark.range(0, len(files), 1, n).mapInArrow(read_partition, schema)


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
