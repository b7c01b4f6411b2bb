"""The SQL text of the rescue projection (:mod:`sparkmark.sources.drift`): literals, names and
types as Spark SQL, each value that did not fit and the ``_rescued_data`` entries of a row.
Plain string building: the DataFrames are drift's.

Example::

    sql_type(StructType([StructField("a b", LongType())]))    # "struct<`a b`:bigint>"
    rescued_sql("_sm_kept")     # CASE WHEN size(_sm_kept) > 0 THEN to_json(...) END AS ...
"""
from __future__ import annotations

from typing import Any, Sequence

from sparkmark.planning.schema_drift import CORRUPT_KEY, FILE_KEY, RESCUED


def bad_names(bad: dict[str, tuple[str, str]]) -> str:
    """SQL: the known columns whose value did not fit in a row (``_sm_bad``), null if none."""
    if not bad:
        return "CAST(NULL AS array<string>) AS _sm_bad"
    names = "filter(array(" + ", ".join(f"CASE WHEN {b} THEN {sql_str(n)} END"
                                        for n, (b, _) in bad.items()) + "), x -> x IS NOT NULL)"
    any_bad = " OR ".join(f"coalesce({b}, false)" for b, _ in bad.values())
    return f"CASE WHEN {any_bad} THEN {names} END AS _sm_bad"


def from_text(text: str, t: Any, opts: str) -> str:
    """A value Spark's JSON map gave as text (a string unquoted, anything else as its JSON),
    converted as the JSON reader converts it to type ``t`` (SQL text; null when it does not
    fit)."""
    from pyspark.sql.types import (ArrayType, BooleanType, MapType, NumericType, StringType,
                                   StructType)
    if isinstance(t, StringType):
        return text
    wrapped = (f"concat('{{\"x\":', {text}, '}}')"
               if isinstance(t, (NumericType, BooleanType, StructType, ArrayType, MapType))
               else f"to_json(named_struct('x', {text}))")
    return f"from_json({wrapped}, {sql_str('struct<x:' + sql_type(t) + '>')}, {opts}).x"


def sql_str(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_name(name: str) -> str:
    """A Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def sql_type(t: Any) -> str:
    """A Spark data type as SQL text (field names quoted, unlike ``simpleString``)."""
    from pyspark.sql.types import ArrayType, MapType, StructType
    if isinstance(t, StructType):
        return "struct<" + ",".join(f"{sql_name(f.name)}:{sql_type(f.dataType)}"
                                    for f in t.fields) + ">"
    if isinstance(t, ArrayType):
        return f"array<{sql_type(t.elementType)}>"
    if isinstance(t, MapType):
        return f"map<{sql_type(t.keyType)},{sql_type(t.valueType)}>"
    return str(t.simpleString())


def pair_sql(key: str, value: str) -> str:
    """One ``_rescued_data`` entry as SQL: ``key`` (a name) and ``value`` (SQL text)."""
    return f"named_struct('k', {sql_str(key)}, 'v', {value})"


def kept_sql(bad: dict[str, tuple[str, str]], raw: str, more: Sequence[str] = ()) -> str:
    """The ``_rescued_data`` entries of a row, as SQL: each typed column whose value did not
    fit (``bad``: name -> (condition, raw value)), ``more`` entries, and the raw record when
    Spark could not parse it whole and no single value explains why."""
    any_bad = " OR ".join(f"coalesce({b}, false)" for b, _ in bad.values()) or "false"
    pairs = [f"CASE WHEN {b} THEN {pair_sql(n, v)} END" for n, (b, v) in bad.items()]
    pairs += list(more)
    pairs.append(f"CASE WHEN {raw} IS NOT NULL AND NOT ({any_bad}) THEN "
                 f"{pair_sql(CORRUPT_KEY, raw)} END")
    return f"CAST(filter(array({', '.join(pairs)}), x -> x IS NOT NULL) AS " \
           "array<struct<k:string,v:string>>)"


def rescued_sql(kept: str) -> str:
    """``_rescued_data`` from a column of entries: their JSON object with the file's path, or
    null when there are none."""
    return (f"CASE WHEN size({kept}) > 0 THEN to_json(map_from_entries(concat({kept}, "
            f"array({pair_sql(FILE_KEY, 'input_file_name()')})))) END AS {sql_name(RESCUED)}")
