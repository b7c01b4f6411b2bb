"""Reading json/csv files under a known schema (option ``schemaEvolution``): the Spark side.

The decisions are pure (:mod:`sparkmark.planning.schema_drift`); this module only asks Spark:

1. *Choose* (:func:`~sparkmark.planning.schema_drift.choose_read`) whether this run needs
   Spark's inference over its new files: only a first run (nothing known, no ``schema``
   given), ``addNewColumns``/``failOnNewColumns`` on JSON, JSON with ``multiLine`` or another
   encoding than UTF-8, a CSV header this module does not parse itself, and ``addNewColumns``
   on CSV with ``inferSchema=true`` when a header names a new column.  CSV files are grouped
   by header line (each read on the driver, one small read per file), so a file whose header
   gained, lost or reordered columns is read by its own header, not by the first file's
   positions.
2. *The steady state* (no inference: :func:`_read_known`).  Nothing runs until the job's own
   action.  JSON lines are read as text and parsed with the known schema (``from_json``,
   ``PERMISSIVE`` with an internal corrupt-record column); in the same projection each
   line's top-level keys (``json_object_keys``) are compared with the known names, and only
   where one is not known is the line parsed again as a map of strings: a new key's value goes
   into ``_rescued_data``, a key spelt in another case fills its known column.  CSV: each
   group's header names its columns, the known ones read with the known type, the others as
   strings.
3. *With inference*: Spark's own over the new files, then
   :func:`~sparkmark.planning.schema_drift.plan_drift`, then the read with the planned types
   (``mode=PERMISSIVE`` and an internal corrupt-record column), new columns as strings.
4. Either way a value Spark could not convert is found again in the raw record (``from_json``
   to a map of strings, ``from_csv`` to strings) and goes into ``_rescued_data`` with the
   file's path, as do new columns' values and rows that cannot be parsed at all.
5. *Count* rows with rescued (or, in mode ``none``, dropped) values and malformed rows,
   reported in the ledger at commit; in the steady state the same metrics say which new
   columns, values that did not fit and missing columns the run met.  On a classic session
   they ride along with the job's own action (a Spark ``Observation`` on the returned
   DataFrame: no extra pass over the files); when no action ran it (no action, Spark Connect,
   an action that did not report its metrics) the commit runs one aggregate over the new
   files instead.

Example: ``df, plan, counts = read_drift(spark, "json", files, listing, opts, None, None,
"rescue", load=load)``, then ``counts()`` at commit
"""
from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from sparkmark.core.errors import SourceError
from sparkmark.engine.fs import file_system
from sparkmark.planning.bands import FileEntry
from sparkmark.sources.drift_sql import (bad_names, from_text, kept_sql, pair_sql, rescued_sql,
                                        sql_name, sql_str, sql_type)
from sparkmark.planning.schema_drift import (CORRUPT, RESCUED, DriftPlan,
                                            Field, choose_read, csv_header, merge_seen,
                                            name_paths, plan_drift, skip_hint)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: how many files a failed read (or a failOnNewColumns error) probes one by one to name them
PROBE_LIMIT = 20


def fields_of(schema: "StructType | None") -> list[Field] | None:
    """A StructType as plain ``(name, simpleString)`` pairs."""
    if schema is None:
        return None
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def known_from_element(text: Any) -> "StructType | None":
    """The known schema kept in a bookmark element (Spark's JSON form), or None."""
    if not text:
        return None
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(json.loads(text))
    except Exception:  # noqa: BLE001 - an unreadable schema is relearnt from the data
        return None


def _struct(pairs: Sequence[tuple[str, Any]]) -> "StructType":
    from pyspark.sql.types import StructField, StructType
    return StructType([StructField(n, t, True) for n, t in pairs])


def _first_line(spark: "SparkSession", f: FileEntry, opts: dict[str, str]) -> str:
    """The first line of a file (its CSV header), reading at most 64 KB."""
    n = max(0, min(f.size, 65536))
    enc = opts.get("encoding") or opts.get("charset") or "utf-8"
    if f.path.startswith("file:"):
        local = f.path[len("file:"):]
        while local.startswith("//"):
            local = local[1:]
        with open(local, "rb") as fh:
            data = fh.read(n)
    else:
        fs = file_system(spark, f.path)
        jfs = getattr(fs, "fs", None)
        if jfs is None or not hasattr(jfs, "open"):
            raw = spark.read.text(f.path.replace("[", "\\[")).limit(1).collect()
            return raw[0][0] if raw else ""
        stream = jfs.open(fs.path(f.path))
        try:
            jvm: Any = spark.sparkContext._jvm
            data = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream, n))
        finally:
            stream.close()
    return data.decode(enc, errors="replace").split("\n", 1)[0]


def _groups(spark: "SparkSession", fmt: str, files: Sequence[FileEntry],
            opts: dict[str, str]) -> list[tuple[str | None, Sequence[FileEntry]]]:
    """Files Spark can read together, each group with its CSV header line: CSV files with the
    same header line, else all (header ``None``)."""
    if fmt != "csv" or str(opts.get("header", "false")).lower() != "true":
        return [(None, files)]
    by_header: dict[str, list[FileEntry]] = {}
    for f in files:
        by_header.setdefault(_first_line(spark, f, opts), []).append(f)
    return [*by_header.items()]


def read_drift(spark: "SparkSession", fmt: str, files: Sequence[FileEntry], listing: Any,
               opts: dict[str, str], user_schema: "StructType | None",
               known: "StructType | None", mode: str, *, load: Callable[..., "DataFrame"],
               job: str | None = None, ctx: str | None = None
               ) -> tuple["DataFrame", DriftPlan, Callable[[], dict[str, Any]]]:
    """The new files as a DataFrame under the known schema (see the module docstring):
    ``(df, plan, counts)``; ``counts()`` (call it at commit, after the job's actions) gives
    ``malformed_records`` and ``rescued_records`` (``dropped_records`` in mode ``none``)."""
    from pyspark.sql.types import StringType
    base_known = user_schema if user_schema is not None else known
    permissive = {**{k: v for k, v in opts.items() if k.lower() != "mode"},
                  "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    if not files:  # an empty run: the known columns (and _rescued_data), nothing to compare
        if base_known is None:
            return (load(spark, fmt, files, listing, opts, None), plan_drift([], [], mode),
                    dict)
        plan = plan_drift(None, fields_of(base_known) or [], mode)
        known_types = {f.name: f.dataType for f in base_known.fields}
        cols = [(n, known_types[n]) for n, _ in plan.columns]
        if plan.rescue:
            cols.append((RESCUED, StringType()))
        return load(spark, fmt, files, listing, opts, _struct(cols)), plan, dict
    found = _groups(spark, fmt, files, opts)
    groups = [g for _, g in found]
    headers = ([csv_header(line, opts) for line, _ in found]
               if found[0][0] is not None else None)
    choice = choose_read(fmt, mode, fields_of(base_known), opts, headers)
    if not choice.infer:
        assert base_known is not None  # a read without inference has a known schema
        return _read_known(spark, fmt, groups, headers, listing, permissive, base_known, mode,
                           load, job, ctx)
    seen_struct: list["StructType"] = []
    inferred: list["DataFrame"] = []
    for group in groups:  # a file Spark cannot open fails here, named with the way out
        inferred.append(load(spark, fmt, group, listing, permissive, None))
        seen_struct.append(inferred[-1].schema)
    seen = merge_seen([fields_of(s) or [] for s in seen_struct])
    plan = replace(plan_drift(fields_of(base_known), seen, mode), inference=choice.why)
    if plan.fails:
        raise SourceError(_new_columns_error(spark, fmt, groups, seen_struct, listing,
                                             permissive, plan, load, job, ctx))
    types: dict[str, Any] = {}
    for s in seen_struct:
        for f in s.fields:
            types.setdefault(f.name.lower(), f.dataType)
    if base_known is not None:
        for f in base_known.fields:
            types[f.name.lower()] = f.dataType
    frames = []
    for group, s, pre in zip(groups, seen_struct, inferred):
        frames.append(_read_group(spark, fmt, group, listing, permissive, s, plan, types, load,
                                  pre))
    return _finish(spark, frames, plan, None)


def _finish(spark: "SparkSession", frames: Sequence["DataFrame"], plan: DriftPlan,
            known: "StructType | None", present: Sequence[str] = ()
            ) -> tuple["DataFrame", DriftPlan, Callable[[], dict[str, Any]]]:
    """The groups' frames as one, observed (see :func:`_count`), internal columns dropped."""
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    observed, counts = _count(spark, df, plan, known, present)
    out = [c for c in df.columns if c not in (CORRUPT, RESCUED, "_sm_new", "_sm_bad")]
    if plan.rescue:
        out.append(RESCUED)
    return observed.select(*out), plan, counts


def _read_known(spark: "SparkSession", fmt: str, groups: list[Sequence[FileEntry]],
                headers: "list[tuple[str, ...] | None] | None", listing: Any,
                permissive: dict[str, str], known: "StructType", mode: str,
                load: Callable[..., "DataFrame"], job: str | None, ctx: str | None
                ) -> tuple["DataFrame", DriftPlan, Callable[[], dict[str, Any]]]:
    """The steady state: the new files read under the known schema, no inference pass.

    JSON: each line is read as text and parsed with the known schema (``from_json``); its
    top-level keys, compared with the known names in the same projection, find new columns and
    keys spelt in another case, whose values are then taken from the line parsed as a map.
    CSV: each group's header (read on the driver) names its columns; known ones get the known
    type, the others are read as strings."""
    from pyspark.sql.types import StringType, StructField, StructType
    known_types = {f.name.lower(): f.dataType for f in known.fields}
    if fmt == "json":
        plan = plan_drift(fields_of(known), fields_of(known) or [], mode)
        return _finish(spark, [_read_json_known(spark, groups[0], listing, permissive, known,
                                                load)], plan, known,
                       [f.name for f in known.fields])
    seen_struct = []
    for group, names in zip(groups, headers or [None] * len(groups)):
        if names is None:  # no header: the known columns by position
            cols = [f.name for f in known.fields]
            parts: list[str] = []
        else:
            parts = _partition_names(listing, group, None, fmt)
            cols = list(names) + [p for p in parts if p.lower() not in
                                  {n.lower() for n in names}]
        seen_struct.append(StructType([StructField(n, known_types.get(n.lower(), StringType()),
                                                   True) for n in cols]))
    plan = plan_drift(fields_of(known), merge_seen([fields_of(s) or [] for s in seen_struct]),
                      mode)
    if plan.fails:
        raise SourceError(_new_columns_error(spark, fmt, groups, seen_struct, listing,
                                             permissive, plan, load, job, ctx))
    types = {**{f.name.lower(): f.dataType for s in seen_struct for f in s.fields},
             **known_types}
    frames = [_read_group(spark, fmt, group, listing, permissive, s, plan, types, load)
              for group, s in zip(groups, seen_struct)]
    return _finish(spark, frames, plan, known)


#: JSON options that change the syntax Spark accepts (``json_object_keys`` knows none of them)
_SYNTAX_OPTIONS = ("allowcomments", "allowunquotedfieldnames", "allowsinglequotes",
                   "allownumericleadingzeros", "allownonnumericnumbers",
                   "allowbackslashescapinganycharacter", "allowunquotedcontrolchars")
#: reader options the text source takes for the JSON lines (the rest go to the parser)
_TEXT_OPTIONS = ("linesep", "ignorecorruptfiles", "ignoremissingfiles", "basepath")


def _read_json_known(spark: "SparkSession", files: Sequence[FileEntry], listing: Any,
                     permissive: dict[str, str], known: "StructType",
                     load: Callable[..., "DataFrame"]) -> "DataFrame":
    """JSON lines under the known schema, in one projection over the text (see
    :func:`_read_known`): the known columns typed, ``_sm_corrupt_record`` the line of a row
    Spark could not parse whole, ``_sm_kept`` the entries of ``_rescued_data``, ``_sm_new``
    the row's new keys and ``_sm_bad`` the known columns whose value did not fit."""
    text = load(spark, "text", files, listing,
                {k: v for k, v in permissive.items() if k.lower() in _TEXT_OPTIONS}, None)
    parts = {c.lower(): c for c in text.columns[1:]}  # partition columns follow ``value``
    body = [f for f in known.fields if f.name.lower() not in parts]
    parser = {k: v for k, v in permissive.items() if k.lower() not in _TEXT_OPTIONS}
    opts = "map(" + ", ".join(f"{sql_str(k)}, {sql_str(str(v))}" for k, v in parser.items()) + ")"
    struct = "struct<" + ",".join([f"{sql_name(f.name)}:{sql_type(f.dataType)}"
                                   for f in body] + [f"{sql_name(CORRUPT)}:string"]) + ">"
    as_map = f"from_json(value, 'map<string,string>', {opts})"
    keys = (f"map_keys({as_map})" if any(k.lower() in _SYNTAX_OPTIONS for k in parser)
            else "json_object_keys(value)")
    exact = ", ".join(sql_str(n) for n in [f.name for f in body] + list(parts.values()))
    lows = ", ".join(sql_str(n) for n in sorted({f.name.lower() for f in known.fields} | set(parts)))
    # (each once: a key a line holds twice would be two entries of one _rescued_data key)
    unknown = f"array_distinct(filter({keys}, k -> NOT (k IN ({exact}))))" if exact else \
        f"array_distinct({keys})"
    # a line of blanks is no row (as Spark's JSON reader skips it); one that is not an object
    # (an array, a number) is a malformed row, its line rescued.  (Filtered before the parse:
    # a filter on the parsed struct would be pushed below it and parse each line twice.)
    # Each derived value is one column of a stage, named by the stages after it instead of
    # repeated in their text: Spark analyses, optimises and plans this projection on every run,
    # at a cost that grows with its text (with each value that did not fit written out where
    # it is used, that cost was most of a steady run's).
    corrupt, pn = sql_name(CORRUPT), [sql_name(c) for c in parts.values()]
    stages: list[list[str]] = [
        [*pn, "value", f"from_json(value, {sql_str(struct)}, {opts}) AS _sm_p",
         f"{unknown} AS _sm_unknown"],
        [*pn, "value", "_sm_p", "_sm_unknown",
         "coalesce(size(_sm_unknown) > 0, false) AS _sm_d",
         f"CASE WHEN _sm_p IS NULL THEN value ELSE _sm_p.{corrupt} END AS {corrupt}"]]
    # _sm_v<i>: the key spelt in another case that fills known column i (when the exact key
    # gave no value); _sm_m: the line as a map, only where a key is not known or the line is
    # corrupt
    stages.append([*pn, "_sm_p", "_sm_unknown", "_sm_d", corrupt,
                   f"CASE WHEN _sm_d OR {corrupt} IS NOT NULL THEN {as_map} END AS _sm_m",
                   *[f"CASE WHEN _sm_d AND _sm_p.{sql_name(f.name)} IS NULL THEN "
                     f"try_element_at(filter(_sm_unknown, k -> lower(k) = "
                     f"{sql_str(f.name.lower())}), 1) END AS _sm_v{i}"
                     for i, f in enumerate(body)]])
    vs = [f"_sm_v{i}" for i in range(len(body))]
    # _sm_f<i>: that key's value converted to the column's type (null when it does not fit)
    stages.append([*pn, "_sm_p", "_sm_unknown", "_sm_d", corrupt, "_sm_m", *vs,
                   *[f"{from_text(f'_sm_m[_sm_v{i}]', f.dataType, opts)} AS _sm_f{i}"
                     for i, f in enumerate(body)]])
    known_types = {f.name.lower(): (f.name, f.dataType) for f in known.fields}
    cols, extras = [], []
    for i, f in enumerate(body):
        cols.append(f"CAST(coalesce(_sm_p.{sql_name(f.name)}, _sm_f{i}) AS "
                    f"{sql_type(f.dataType)}) AS {sql_name(f.name)}")
    for low, c in parts.items():
        if low in known_types:
            n, t = known_types[low]
            cols.append(f"CAST({sql_name(c)} AS {sql_type(t)}) AS {sql_name(n)}")
        else:  # a partition column the known schema does not have: rescued, as a new column
            extras.append(c)
    # _sm_b<i>: column i's value that did not fit (the raw text), null if it fitted: the exact
    # key's in a row Spark could not convert whole, else the other-case key's that did not
    # convert
    checks = [f"coalesce(CASE WHEN {corrupt} IS NOT NULL AND _sm_p.{sql_name(f.name)} IS NULL "
              f"THEN _sm_m[{sql_str(f.name)}] END, CASE WHEN _sm_f{i} IS NULL THEN "
              f"_sm_m[_sm_v{i}] END) AS _sm_b{i}" for i, f in enumerate(body)]
    consumed = f"array({', '.join(vs)})" if body else "CAST(array() AS array<string>)"
    more = (f"CASE WHEN _sm_d THEN transform(filter(_sm_unknown, k -> _sm_m[k] IS NOT NULL AND "
            f"NOT coalesce(array_contains({consumed}, k), false)), k -> "
            f"named_struct('k', k, 'v', _sm_m[k])) END AS _sm_more")
    new = (f"CASE WHEN _sm_d THEN filter(_sm_unknown, k -> NOT (lower(k) IN ({lows}))) END "
           "AS _sm_new")
    names = [sql_name(f.name) for f in known.fields]
    stages.append([*cols, *[sql_name(c) for c in extras], corrupt, *checks, more, new])
    bad = {f.name: (f"(_sm_b{i} IS NOT NULL)", f"_sm_b{i}") for i, f in enumerate(body)}
    extra_parts = [f"CASE WHEN {sql_name(c)} IS NOT NULL THEN "
                   f"{pair_sql(c, f'CAST({sql_name(c)} AS STRING)')} END" for c in extras]
    kept = (f"concat({kept_sql(bad, corrupt, extra_parts)}, coalesce(_sm_more, "
            "CAST(array() AS array<struct<k:string,v:string>>)))")
    stages.append([*names, corrupt, f"{kept} AS _sm_kept", "_sm_new", bad_names(bad)])
    stages.append([*names, corrupt, rescued_sql("_sm_kept"), "_sm_new", "_sm_bad"])
    return _chain(text, "value RLIKE '[^ \\t\\r\\n]'", stages)


def _chain(df: "DataFrame", where: str, stages: Sequence[Sequence[str]]) -> "DataFrame":
    """``df`` filtered by ``where``, then each stage's projection over the one before.  (One
    call per stage: Spark analyses each over its analysed child.  As one SQL query of nested
    selects it took longer: the analyser resolves one level per pass over the whole plan.)"""
    df = df.where(where)
    for stage in stages:
        df = df.selectExpr(*stage)
    return df


def _read_group(spark: "SparkSession", fmt: str, group: Sequence[FileEntry], listing: Any,
                permissive: dict[str, str], seen: "StructType", plan: DriftPlan,
                types: dict[str, Any], load: Callable[..., "DataFrame"],
                inferred: "DataFrame | None" = None) -> "DataFrame":
    """One group's rows: the planned columns typed, the extra ones rescued, the raw record
    re-read where Spark could not convert a value (SQL text: one py4j call per projection).

    JSON whose inferred columns are exactly the ones to read (the common case: no drift) reuses
    the inference's DataFrame instead of loading the files again under the same schema (on an
    object store that second load costs a status request or two per file)."""
    from pyspark.sql.types import StringType
    typed = {n.lower(): n for n, _ in plan.columns}
    extra = {n.lower(): n for n in plan.extra}
    if fmt == "csv":  # positional: this group's own columns, in its header's order
        read_cols = [(f.name, types[f.name.lower()] if f.name.lower() in typed else StringType())
                     for f in seen.fields if f.name != CORRUPT]
    else:  # by the files' own spelling: Spark's JSON parser matches names case-sensitively,
        # and a key "ID" read as the known "id" would be dropped without a trace
        spelled = {f.name.lower(): f.name for f in seen.fields if f.name != CORRUPT}
        read_cols = [(spelled.get(n.lower(), n), types[n.lower()]) for n, _ in plan.columns] + \
                    [(n, StringType()) for n in plan.extra]
    schema = _struct(read_cols + [(CORRUPT, StringType())])
    opts = dict(permissive)
    if fmt == "csv":
        opts["enforceSchema"] = "true"
    if fmt == "json" and inferred is not None and _same_columns(seen, read_cols):
        df = inferred if CORRUPT in inferred.columns else inferred.selectExpr(
            "*", f"CAST(NULL AS STRING) AS {sql_name(CORRUPT)}")
    else:
        df = load(spark, fmt, group, listing, opts, schema)
    have = {c.lower(): c for c in df.columns}
    raw = sql_name(CORRUPT)
    # the raw record parsed again (``_sm_r``: once per row, only for a row Spark could not
    # convert whole), each value taken from it by name
    if fmt == "json":
        reparse = f"from_json({raw}, 'map<string,string>')"

        def raw_value(name: str) -> str:
            return f"_sm_r[{sql_str(name)}]"
    else:
        names = [n for n, _ in read_cols if n.lower() not in
                 {c.lower() for c in _partition_names(listing, group, seen, fmt)}]
        csv_opts = [f"{sql_str(k)}, {sql_str(str(v))}" for k, v in permissive.items()
                    if k.lower() in ("sep", "delimiter", "quote", "escape", "nullvalue",
                                     "ignoreleadingwhitespace", "ignoretrailingwhitespace")]
        args = sql_str(", ".join(f"{sql_name(n)} STRING" for n in names))
        if csv_opts:  # no empty map(): that is a map<void,void>, which from_csv refuses
            args += f", map({', '.join(csv_opts)})"
        reparse = f"from_csv({raw}, {args})" if names else "CAST(NULL AS struct<x:string>)"

        def raw_value(name: str) -> str:
            return f"_sm_r.{sql_name(name)}" if name in names else "CAST(NULL AS STRING)"
    null_value = sql_str(str(permissive.get("nullValue", "")))
    # each value that did not fit is one column (``_sm_b<i>``), named by the expressions that
    # use it (the entry, the names, the count) instead of repeated in their text: Spark
    # analyses and optimises every run's projection, at a cost that grows with its text
    checks: list[tuple[str, str]] = []
    for low, name in typed.items():
        if low not in have:
            continue
        value = raw_value(have[low])
        cond = f"{raw} IS NOT NULL AND {sql_name(have[low])} IS NULL AND {value} IS NOT NULL"
        if fmt == "csv":
            cond += f" AND {value} != {null_value}"
        checks.append((name, f"CASE WHEN {cond} THEN {value} END"))
    extras = [(name, f"CAST({sql_name(have[low])} AS STRING)") for low, name in extra.items()
              if low in have]
    cols = [f"CAST({sql_name(have[n.lower()])} AS {sql_type(types[n.lower()])}) AS "
            f"{sql_name(n)}" if n.lower() in have else
            f"CAST(NULL AS {sql_type(types[n.lower()])}) AS {sql_name(n)}"
            for n, _ in plan.columns]
    if checks:
        df = df.selectExpr("*", f"{reparse} AS _sm_r")
    df = df.selectExpr(*cols, raw, *[f"{v} AS _sm_b{i}" for i, (_, v) in enumerate(checks)],
                       *[f"{v} AS _sm_x{i}" for i, (_, v) in enumerate(extras)])
    bad = {name: (f"(_sm_b{i} IS NOT NULL)", f"_sm_b{i}") for i, (name, _) in enumerate(checks)}
    more = [f"CASE WHEN _sm_x{i} IS NOT NULL THEN {pair_sql(name, f'_sm_x{i}')} END"
            for i, (name, _) in enumerate(extras)]
    return df.selectExpr(*[sql_name(n) for n, _ in plan.columns], raw,
                         f"{kept_sql(bad, raw, more)} AS _sm_kept", bad_names(bad)).selectExpr(
        *[sql_name(n) for n, _ in plan.columns], raw, rescued_sql("_sm_kept"),
        "CAST(NULL AS array<string>) AS _sm_new", "_sm_bad")


def _same_columns(seen: "StructType", read_cols: Sequence[tuple[str, Any]]) -> bool:
    """Whether an inferred schema (less the corrupt-record column) has exactly ``read_cols``:
    the same names, each once (case-insensitively), with the same types."""
    fields = [(f.name, f.dataType) for f in seen.fields if f.name != CORRUPT]
    names = [n.lower() for n, _ in fields]
    return (len(set(names)) == len(names) == len(read_cols)
            and {n: t for n, t in fields} == dict(read_cols))


def _partition_names(listing: Any, group: Sequence[FileEntry], seen: "StructType | None",
                     fmt: str) -> list[str]:
    """The partition columns (``key=value`` folders below the base path) of a group's files."""
    if fmt != "csv" or not group:
        return []
    base = listing.base(group[0].path) if listing is not None else None
    if base is None:
        return []
    rel = group[0].path[len(base) + 1:].split("/")[:-1]
    return [part.split("=", 1)[0] for part in rel if "=" in part]


def known_json(df: "DataFrame") -> str:
    """The known schema to commit: ``df``'s columns without ``_rescued_data`` (Spark JSON)."""
    return _struct([(f.name, f.dataType) for f in df.schema.fields if f.name != RESCUED]).json()


def _count(spark: "SparkSession", df: "DataFrame", plan: DriftPlan,
           known: "StructType | None" = None, present: Sequence[str] = ()
           ) -> tuple["DataFrame", Callable[[], dict[str, Any]]]:
    """Rows with values that did not fit, and rows Spark could not parse whole:
    ``(df to return, counts())``.  Classic sessions observe them on the job's own action;
    ``counts()`` aggregates once over ``df`` when no action delivered them.

    With ``known`` (a read without inference) the same metrics also say what the run met:
    ``new_columns`` (keys no known column has), ``changed_columns`` (known columns with values
    that did not fit) and, for the ``present`` columns, ``missing_columns`` (no value in any
    row)."""
    from pyspark.sql import functions as F

    from sparkmark.engine.compat import is_connect, observation_ready
    key = "rescued_records" if plan.rescue else "dropped_records"
    metrics = [F.expr(f"count({sql_name(RESCUED)}) AS r"),
               F.expr(f"count({sql_name(CORRUPT)}) AS m")]
    if known is not None:
        # (as JSON text: Spark 3.5's Observation hands an array over as a Java object)
        metrics += [F.expr(f"to_json(array_distinct(flatten(collect_set({c})))) AS {k}")
                    for c, k in (("_sm_new", "n"), ("_sm_bad", "b"))]
        metrics += [F.expr(f"count({sql_name(c)}) AS {sql_name('p_' + str(i))}")
                    for i, c in enumerate(present)]
    types = {f.name: f.dataType.simpleString() for f in known.fields} if known else {}

    def result(row: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"malformed_records": int(row["m"]), key: int(row["r"])}
        if known is None:
            return out
        new = sorted(set(json.loads(row["n"] or "[]")))
        bad = set(json.loads(row["b"] or "[]"))
        changed = [f"{n}: {types[n]} -> other" for n in types if n in bad]
        missing = [c for i, c in enumerate(present) if not row[f"p_{i}"] and c not in bad]
        for name, found in (("new_columns", new), ("changed_columns", changed),
                            ("missing_columns", missing)):
            if found:
                out[name] = found
        return out

    def aggregate() -> dict[str, Any]:
        return result(df.agg(*metrics).collect()[0])

    if is_connect(spark):
        return df, aggregate
    try:
        from pyspark.sql import Observation
        observation = Observation(f"sparkmark_drift_{uuid.uuid4().hex}")
        observed = df.observe(observation, *metrics)
    except Exception:  # noqa: BLE001 - a Spark without observations: count at commit
        return df, aggregate

    def counts() -> dict[str, Any]:
        jo = getattr(observation, "_jo", None)
        try:  # non-blocking: Observation.get waits for an action that may never come
            done = jo is not None and observation_ready(jo)
            got = observation.get if done else None
        except Exception:  # noqa: BLE001 - the action failed or reported nothing
            got = None
        if not got or "r" not in got:
            return aggregate()
        return result(got)
    return observed, counts


def _new_columns_error(spark: "SparkSession", fmt: str, groups: list[Sequence[FileEntry]],
                       seen: list["StructType"], listing: Any, permissive: dict[str, str],
                       plan: DriftPlan, load: Callable[..., "DataFrame"], job: str | None,
                       ctx: str | None) -> str:
    """failOnNewColumns: name the files that bring the new columns (each probed alone, up to
    :data:`PROBE_LIMIT` files) and the ways out."""
    new = {n.lower() for n in plan.new}
    culprits: list[str] = []
    probed = 0
    for group, s in zip(groups, seen):
        if not new & {f.name.lower() for f in s.fields}:
            continue
        if len(group) == 1 or fmt == "csv":
            culprits.extend(f.path for f in group)
            continue
        for f in group:
            if probed >= PROBE_LIMIT:
                break
            probed += 1
            try:
                names = {c.lower() for c in load(spark, fmt, [f], listing, permissive,
                                                 None).columns}
            except SourceError:
                continue
            if names & new:
                culprits.append(f.path)
    shown = name_paths(culprits)
    return (f"new column(s) {', '.join(plan.new)} in {shown or 'the new files'} (source "
            f"{ctx!r}), refused by schemaEvolution=failOnNewColumns; nothing was committed. "
            "Add them with schemaEvolution=addNewColumns, keep their values in "
            f"{RESCUED} with schemaEvolution=rescue, or "
            + (skip_hint(job, ctx, culprits) or "skip the files with sparkmark bookmark set "
               "--processed PATH"))
