"""Field paths and type names shared by the Glue layer (pure helpers over Spark schemas).

    split_path("a.`x.y`")            # ["a", "x.y"]
    glue_type("decimal(7,2)", "m")   # DecimalType(7,2); None for array/struct/choice
    quote("a.b")                     # "`a.b`"
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkmark.engine import compat
from sparkmark.core.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

#: Glue type names that name no single Spark type to cast to (the value is kept as it is)
NO_CAST = {"array", "struct", "map", "choice", "object", "null", "union"}


def split_path(path: Any) -> list[str]:
    """``a.b`` -> ``["a", "b"]``; ``a.`x.y``` -> ``["a", "x.y"]`` (pure).

        split_path("provider.id")   # ["provider", "id"]
    """
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"field path {path!r} must be a non-empty string")
    parts: list[str] = []
    cur: list[str] = []
    quoted = False
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


def quote(name: str) -> str:
    """A top-level column name as a Spark column reference: ``quote("a.b") == "`a.b`"``."""
    return "`" + name.replace("`", "``") + "`"


def find_field(schema: "StructType", parts: list[str],
               case_sensitive: bool) -> "tuple[Column, DataType] | None":
    """``(Column, DataType)`` of a (nested) field, or ``None`` if the field is absent.

        find_field(df.schema, ["inner", "n"], case_sensitive=False)
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType
    col: Any = None
    dtype: Any = schema
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
        col = F.col(quote(match)) if col is None else col.getField(match)
    return col, dtype


def glue_type(type_name: Any, what: Any) -> "DataType | None":
    """Glue's (Hive's) type name as a Spark type; ``None`` for types that are kept as they are.

        glue_type("bigint", "column id")   # LongType()
    """
    if not isinstance(type_name, str) or not type_name.strip():
        raise ConfigError(f"{what}: the type must be a type name such as 'string' or "
                          "'decimal(7,2)'")
    name = type_name.strip().lower()
    if name in NO_CAST:
        return None
    try:
        return compat.parse_type(name)  # DataType.fromDDL is Spark 4 only
    except Exception:  # noqa: BLE001 - Spark's parse error
        raise ConfigError(f"{what}: unknown type {type_name!r}; use a Glue/Spark type such as "
                          "string, int, long, double, decimal(7,2), timestamp, date, "
                          "boolean") from None


def try_cast(col: "Column", dtype: "DataType") -> "Column":
    """Cast with Glue's rule: a value that does not fit becomes null (no ANSI error).

        try_cast(F.col("id"), LongType())
    """
    return compat.try_cast(col, dtype)
