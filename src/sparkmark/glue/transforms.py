"""Glue transforms: ``ApplyMapping`` (plus ``SelectFields``, ``DropFields``, ``RenameField``).

``from sparkmark.glue.transforms import *`` brings every Glue transform name into scope, like
``from awsglue.transforms import *``; the ones sparkmark does not implement raise
:class:`GlueUnsupportedError` when applied, naming the transform and the DataFrame way.

ApplyMapping
    ``mappings`` are ``(source, source_type, target, target_type)``; the result has exactly the
    target columns, in mapping order, cast to ``target_type`` (Glue's type names: ``string``,
    ``int``, ``long``, ``double``, ``decimal(p,s)``, ``timestamp``, ...).  Dotted paths reach into
    structs (names with dots in backticks); a dotted target builds a struct.  Source names match
    case-insensitively unless ``case_sensitive=True``.  A source field absent from this run's
    input (schema-on-read, as in Glue) gives a null column of the target type, so every run
    writes the same columns; if *no* source field exists the mapping is wrong: an error.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError
from ._common import GlueUnsupportedError, module_getattr, unsupported_message
from .dynamicframe import DynamicFrame

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

_NO_CAST = {"array", "struct", "map", "choice", "object", "null", "union"}


class GlueTransform:
    """Base class of the transforms: ``Transform.apply(frame=..., ...)`` or ``Transform()(...)``."""

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> DynamicFrame:
        return cls()(*args, **kwargs)

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> DynamicFrame:  # pragma: no cover
        raise NotImplementedError


def _frame(frame: Any, transform: str) -> DynamicFrame:
    if not isinstance(frame, DynamicFrame):
        raise ConfigError(f"{transform}.apply needs frame=<DynamicFrame>, not "
                          f"{type(frame).__name__}; wrap a DataFrame with "
                          "DynamicFrame.fromDF(df, glueContext, name)")
    return frame


def split_path(path: Any) -> list[str]:
    """``a.b`` -> ``["a", "b"]``; ``a.`x.y``` -> ``["a", "x.y"]`` (pure)."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"field path {path!r} must be a non-empty string")
    parts, cur, quoted = [], [], False
    for ch in path.strip():
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    if quoted or any(not p for p in parts):
        raise ConfigError(f"field path {path!r} is malformed; separate nested fields with dots "
                          "and quote names that contain dots with backticks")
    return parts


def _find(schema, parts: list[str], case_sensitive: bool):
    """``(Column, DataType)`` of a (nested) field, or ``None`` if the field is absent."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType
    col = None
    dtype = schema
    for part in parts:
        if not isinstance(dtype, StructType):
            return None
        names = [f.name for f in dtype.fields]
        match = part if part in names else None
        if match is None and not case_sensitive:
            folded = [n for n in names if n.lower() == part.lower()]
            if len(folded) > 1:
                raise ConfigError(f"field {part!r} matches several fields {folded} when case "
                                  "is ignored; pass case_sensitive=True")
            match = folded[0] if folded else None
        if match is None:
            return None
        dtype = dtype[match].dataType
        col = F.col(f"`{match.replace('`', '``')}`") if col is None else col.getField(match)
    return col, dtype


def _target_type(type_name: Any, mapping: Any) -> "DataType | None":
    from .. import compat
    if not isinstance(type_name, str) or not type_name.strip():
        raise ConfigError(f"mapping {mapping!r}: the target type must be a type name such as "
                          "'string' or 'decimal(7,2)'")
    name = type_name.strip().lower()
    if name in _NO_CAST:
        return None
    try:
        return compat.parse_type(name)  # DataType.fromDDL is Spark 4 only
    except Exception:  # noqa: BLE001 - Spark's parse error
        raise ConfigError(f"mapping {mapping!r}: unknown type {type_name!r}; use a Glue/Spark "
                          "type such as string, int, long, double, decimal(7,2), timestamp, "
                          "date, boolean") from None


class ApplyMapping(GlueTransform):
    def __call__(self, frame: Any = None, mappings: Sequence[Sequence[str]] | None = None,
                 case_sensitive: bool = False, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrame:
        from pyspark.sql import functions as F
        frame = _frame(frame, "ApplyMapping")
        if isinstance(mappings, (str, bytes)) or not isinstance(mappings, Sequence) \
                or not mappings:
            raise ConfigError("ApplyMapping needs mappings=[(source, source_type, target, "
                              "target_type), ...]")
        df = frame.toDF()
        tree: dict[str, Any] = {}
        found_any = False
        for m in mappings:
            if isinstance(m, (str, bytes)) or not isinstance(m, Sequence) or len(m) != 4:
                raise ConfigError(f"ApplyMapping mapping {m!r} must be a 4-tuple (source, "
                                  "source_type, target, target_type)")
            source, _source_type, target, target_type = m
            src = split_path(source)
            dst = split_path(target)
            dtype = _target_type(target_type, m)
            hit = _find(df.schema, src, case_sensitive)
            if hit is None:
                from pyspark.sql.types import StringType
                expr: "Column" = F.lit(None).cast(dtype or StringType())
            else:
                found_any = True
                expr, actual = hit
                if dtype is not None and actual != dtype:
                    expr = expr.cast(dtype)
            node = tree
            for part in dst[:-1]:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise ConfigError(f"ApplyMapping target {target!r} nests inside a field "
                                      "that another mapping already targets; rename one")
            if dst[-1] in node:
                raise ConfigError(f"ApplyMapping maps two sources to the target {target!r}; "
                                  "give each target once")
            node[dst[-1]] = expr
        if not found_any and df.columns:
            raise ConfigError(
                f"ApplyMapping: none of the source fields "
                f"{[m[0] for m in mappings]} exist in the frame (columns: {df.columns}); "
                "check the source names (headerless CSV columns are col0, col1, ...)")

        def build(node: dict[str, Any]) -> list["Column"]:
            return [(F.struct(*build(v)) if isinstance(v, dict) else v).alias(k)
                    for k, v in node.items()]

        return DynamicFrame(df.select(*build(tree)), frame.glue_ctx, transformation_ctx)


def _paths(paths: Any, transform: str) -> list[list[str]]:
    if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence):
        raise ConfigError(f"{transform} needs paths=[field, ...]")
    return [split_path(p) for p in paths]


class SelectFields(GlueTransform):
    def __call__(self, frame: Any = None, paths: Sequence[str] = (), transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        frame = _frame(frame, "SelectFields")
        df = frame.toDF()
        cols = []
        for parts in _paths(paths, "SelectFields"):
            if len(parts) > 1:
                raise GlueUnsupportedError(unsupported_message(
                    "SelectFields of a nested field", "use ApplyMapping with a dotted source"))
            hit = _find(df.schema, parts, case_sensitive=True)
            if hit is not None:
                cols.append(hit[0])
        return DynamicFrame(df.select(*cols), frame.glue_ctx, transformation_ctx)


class DropFields(GlueTransform):
    def __call__(self, frame: Any = None, paths: Sequence[str] = (), transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        frame = _frame(frame, "DropFields")
        df = frame.toDF()
        drop = []
        for parts in _paths(paths, "DropFields"):
            if len(parts) > 1:
                raise GlueUnsupportedError(unsupported_message(
                    "DropFields of a nested field", "use ApplyMapping to rebuild the struct"))
            drop.append(parts[0])
        return DynamicFrame(df.drop(*drop), frame.glue_ctx, transformation_ctx)


class RenameField(GlueTransform):
    def __call__(self, frame: Any = None, old_name: str = "", new_name: str = "",
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        frame = _frame(frame, "RenameField")
        old, new = split_path(old_name), split_path(new_name)
        if len(old) > 1 or len(new) > 1:
            raise GlueUnsupportedError(unsupported_message(
                "RenameField of a nested field", "use ApplyMapping with dotted paths"))
        df = frame.toDF()
        if old[0] not in df.columns:
            raise ConfigError(f"RenameField: field {old_name!r} is not in the frame (columns: "
                              f"{df.columns})")
        return DynamicFrame(df.withColumnRenamed(old[0], new[0]), frame.glue_ctx,
                            transformation_ctx)


_UNSUPPORTED = {
    "DropNullFields": "drop all-null columns of frame.toDF() yourself",
    "ErrorsAsDynamicFrame": "sparkmark reads fail fast; use format_options {'mode': "
                            "'PERMISSIVE'} to keep malformed records",
    "FillMissingValues": "use frame.toDF().fillna(...)",
    "Filter": "use DynamicFrame.fromDF(frame.toDF().filter(...), glueContext, name)",
    "FindIncrementalMatches": None, "FindMatches": None,
    "FlatMap": "use the DataFrame API on frame.toDF()",
    "Join": "use frame1.toDF().join(frame2.toDF(), ...)",
    "Map": "use the DataFrame API on frame.toDF()",
    "MapToCollection": "loop over your frames in Python",
    "Relationalize": "flatten with explode/select on frame.toDF()",
    "ResolveChoice": "sparkmark frames have Spark types; cast with "
                     "frame.toDF().withColumn(name, col(name).cast(type))",
    "SelectFromCollection": "keep the frames in a Python dict",
    "Spigot": "write a sample with frame.toDF().limit(n)",
    "SplitFields": "select the column groups with frame.toDF().select(...)",
    "SplitRows": "filter frame.toDF() twice",
    "Unbox": "parse the column with from_json on frame.toDF()",
    "UnnestFrame": "select nested fields with frame.toDF().select('a.b')",
    "DropDuplicates": "use frame.toDF().dropDuplicates(...)",
    "EvaluateDataQuality": None,
}


def _unsupported_transform(name: str, hint: str | None) -> type:
    def __call__(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        raise GlueUnsupportedError(unsupported_message(f"{name}.apply", hint))
    return type(name, (GlueTransform,), {"__call__": __call__,
                                         "__doc__": f"Not supported: {hint or ''}"})


for _name, _hint in _UNSUPPORTED.items():
    globals()[_name] = _unsupported_transform(_name, _hint)

__all__ = ["GlueTransform", "ApplyMapping", "SelectFields", "DropFields", "RenameField",
           *_UNSUPPORTED]

__getattr__ = module_getattr("sparkmark.glue.transforms", {})
