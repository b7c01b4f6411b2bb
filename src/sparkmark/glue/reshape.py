"""The DataFrame work behind ``DynamicFrame``'s choice and nesting methods (Spark columns in,
Spark columns out; no DynamicFrame here).

``resolveChoice`` parses its actions with :func:`choice_action`, finds string columns holding
mixed kinds of values with :func:`mixed_columns` and splits them with :func:`as_kind`, and casts
to a catalog table's types with :func:`match_catalog`; ``unnest`` is :func:`flatten` and
``relationalize`` is :func:`relationalize_into`.

    kinds = mixed_columns(df, None)          # {"price": ["int", "string"]}
    ints = df.select(as_kind(df["price"], "int").alias("price_int"))
    flat = flatten(df)                       # struct fields become "a.b" columns
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkmark.core.errors import ConfigError
from sparkmark.engine import compat
from sparkmark.glue.fields import quote, try_cast

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def choice_action(action: Any) -> str:
    """A ``resolveChoice`` action, checked: ``make_cols``, ``make_struct``, ``cast:T`` or
    ``project:T`` (``choice_action("Cast:long")`` is ``"Cast:long"``)."""
    text = str(action or "").strip()
    low = text.lower()
    if low in ("make_cols", "make_struct"):
        return low
    if low.startswith(("cast:", "project:")) and text.split(":", 1)[1].strip():
        return text
    if low == "match_catalog":
        raise ConfigError("match_catalog is a choice for the whole frame: "
                          "resolveChoice(choice='match_catalog', database=..., table_name=...)")
    raise ConfigError(f"unknown resolveChoice action {action!r}; use cast:<type>, "
                      "project:<type>, make_cols or make_struct")


_INT = r"^[+-]?[0-9]{1,18}$"
_DOUBLE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_KINDS = ("int", "long", "double", "boolean", "string")


def _kind(col: "Column") -> "Column":
    """The kind of value a string holds: int, long, double, boolean or string (null: null)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    trimmed = F.trim(col)
    as_long = try_cast(trimmed, LongType())
    return (F.when(col.isNull(), None)
            .when(trimmed.rlike(_INT) & as_long.between(-2**31, 2**31 - 1), "int")
            .when(trimmed.rlike(_INT), "long")
            .when(trimmed.rlike(_DOUBLE), "double")
            .when(F.lower(trimmed).isin("true", "false"), "boolean")
            .otherwise("string"))


def mixed_columns(df: "DataFrame", only: list[str] | None) -> dict[str, list[str]]:
    """String columns that hold more than one kind of value, with the kinds (one Spark job)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType
    names = [f.name for f in df.schema.fields if isinstance(f.dataType, StringType)
             and (only is None or f.name in only)]
    if not names:
        return {}
    aggs = [F.collect_set(_kind(df[quote(c)])).alias(f"k{i}") for i, c in enumerate(names)]
    row = df.agg(*aggs).collect()[0]
    out = {}
    for i, c in enumerate(names):
        kinds = set(row[f"k{i}"] or [])
        if {"int", "long"} <= kinds:
            kinds.discard("int")
        if len(kinds) > 1:
            out[c] = [k for k in _KINDS if k in kinds]
    return out


def as_kind(col: "Column", kind: str) -> "Column":
    """The values of string ``col`` that are of ``kind`` (see :func:`mixed_columns`), cast to
    it; null for the others."""
    from pyspark.sql import functions as F
    k = _kind(col)
    match = k.isin("int", "long") if kind == "long" else (k == kind)
    value = F.when(match, F.trim(col) if kind != "string" else col)
    return value if kind == "string" else try_cast(value, compat.parse_type(kind))


def flatten(df: "DataFrame") -> "DataFrame":
    """Struct fields become top-level ``a.b`` columns (Glue's names), level by level."""
    from pyspark.sql.types import StructType
    while any(isinstance(f.dataType, StructType) for f in df.schema.fields):
        cols = []
        for f in df.schema.fields:
            if isinstance(f.dataType, StructType):
                cols += [df[quote(f.name)].getField(s.name).alias(f"{f.name}.{s.name}")
                         for s in f.dataType.fields]
            else:
                cols.append(df[quote(f.name)])
        df = df.select(*cols)
    return df


def relationalize_into(df: "DataFrame", name: str, stage: str, out: dict) -> None:
    """Add ``name`` (``df`` flattened) and a table per array field to ``out``, parents first;
    each level with arrays is written under ``stage`` once to fix its ids."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType
    out[name] = None  # the parent comes before its children
    flat = flatten(df)
    arrays = [f.name for f in flat.schema.fields if isinstance(f.dataType, ArrayType)]
    if not arrays:
        out[name] = flat
        return
    rid = "sm_relationalize_id"
    path = f"{stage}/{len(out)}"
    flat.withColumn(rid, F.monotonically_increasing_id()).write.parquet(path)
    base = flat.sparkSession.read.parquet(path)
    parent = base
    for a in arrays:
        parent = parent.withColumn(a, F.when(base[quote(a)].isNull(), None)
                                   .otherwise(base[rid]))
        child = base.select(base[rid].alias("id"),
                            F.posexplode(base[quote(a)]).alias("index", f"{a}.val"))
        relationalize_into(child, f"{name}_{a}", stage, out)
    out[name] = parent.drop(rid)


def match_catalog(df: "DataFrame", database: Any, table_name: Any) -> "DataFrame":
    """``resolveChoice(choice="match_catalog")``: cast each column to the type of the catalog
    table's column of that name (case-insensitive); other columns and structs are kept."""
    from pyspark.sql.types import StructType
    from sparkmark.glue import catalog
    if not database or not table_name:
        raise ConfigError("resolveChoice(choice='match_catalog') needs database= and "
                          "table_name=")
    spark = df.sparkSession
    table = catalog.lookup(spark, database, table_name)
    types = catalog.column_types(table, spark)
    if not types:
        raise ConfigError(f"resolveChoice(choice='match_catalog'): table {table.name} "
                          f"({table.source}) has no column types; add 'columns' "
                          "([{Name, Type}, ...]) to its entry")
    wanted = {k.lower(): v for k, v in types.items()}
    cols = []
    for f in df.schema.fields:
        t = wanted.get(f.name.lower())
        if t is None or t == f.dataType or isinstance(t, StructType):
            cols.append(df[quote(f.name)])
        else:
            cols.append(try_cast(df[quote(f.name)], t).alias(f.name))
    return df.select(*cols)
