"""``DynamicFrame``: Glue's frame as a thin wrapper around a Spark DataFrame.

Glue's DynamicFrame is schema-on-read with "choice" types; here it is a DataFrame with Spark's
schema.  The transforms in :mod:`sparkmark.glue.transforms` call these methods (as awsglue's do),
so imports go one way: transforms -> dynamicframe.

    frame = DynamicFrame.fromDF(df, glueContext, "orders")
    frame = frame.apply_mapping([("id", "string", "id", "long")])
    frame = frame.resolveChoice(specs=[("price", "cast:double")])
    kept = frame.filter(lambda r: r["id"] > 10)

Methods Glue has and this module lacks raise :class:`GlueUnsupportedAttributeError` naming the
DataFrame way to do it.  The DataFrame work behind ``resolveChoice``, ``unnest`` and
``relationalize`` (mixed-kind columns, flattening, the array tables) is in
:mod:`sparkmark.glue.reshape`.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.glue._common import (GlueUnsupportedError, attribute_error, module_getattr,
                      unsupported_message)
from sparkmark.glue.fields import find_field, glue_type, quote, split_path, try_cast
from sparkmark.glue.reshape import (as_kind, choice_action, flatten, match_catalog, mixed_columns,
                                    relationalize_into)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_HINTS = {
    "spigot": "write a sample with frame.toDF().limit(n) and job.write",
    "errorsCount": "sparkmark reads fail fast on malformed records (mode=FAILFAST); there are "
                   "no error records to count",
    "errorsAsDynamicFrame": "sparkmark reads fail fast on malformed records; use "
                            "format_options {'mode': 'PERMISSIVE'} to keep them",
    "stageErrorsCount": "sparkmark keeps no error records",
    "write": "use glueContext.write_dynamic_frame.from_options(frame=...)",
    "assertErrorThreshold": "sparkmark keeps no error records",
    "flatMap": "use the DataFrame API on frame.toDF()",
}
_CHOICES = ("make_cols", "make_struct", "match_catalog")
_OPS = {"<": "__lt__", ">": "__gt__", "<=": "__le__", ">=": "__ge__", "=": "__eq__",
        "==": "__eq__", "!=": "__ne__"}


class DynamicRecord(dict):
    """One record handed to ``filter``/``map`` functions: a dict of field name to value.

        frame.filter(lambda rec: rec["age"] > 20)
        frame.map(lambda rec: {**rec, "full": rec["first"] + " " + rec["last"]})

    Nested structs are dicts too; ``map`` may change, add or delete fields and returns the
    record (any dict).
    """


def _record(row: Any) -> DynamicRecord:
    return DynamicRecord(row.asDict(recursive=True))


class DynamicFrame:
    """A named Spark DataFrame with Glue's DynamicFrame methods.

        frame = DynamicFrame.fromDF(spark.createDataFrame([(1, "a")], "id int, s string"),
                                    glueContext, "f")
        frame.toDF().show()
    """

    def __init__(self, df: "DataFrame", glue_ctx: Any = None, name: str = ""):
        from pyspark.sql import DataFrame
        if not isinstance(df, DataFrame):
            raise ConfigError(f"DynamicFrame wraps a Spark DataFrame, not {type(df).__name__}; "
                              "use DynamicFrame.fromDF(df, glueContext, name)")
        self._df = df
        self.glue_ctx = glue_ctx
        self.name = name or ""

    def _new(self, df: "DataFrame", name: str = "") -> "DynamicFrame":
        return DynamicFrame(df, self.glue_ctx, name or self.name)

    # -- conversions
    @staticmethod
    def fromDF(dataframe: "DataFrame", glue_ctx: Any = None, name: str = "") -> "DynamicFrame":
        """Wrap a DataFrame: ``DynamicFrame.fromDF(df, glueContext, "name")``."""
        return DynamicFrame(dataframe, glue_ctx, name)

    def toDF(self, options: Any = None) -> "DataFrame":
        """The Spark DataFrame: ``frame.toDF().filter("id > 1")``."""
        if options:
            raise GlueUnsupportedError(unsupported_message(
                "DynamicFrame.toDF(options=...)", "ResolveOption specs do not apply (there are "
                "no choice types); call frame.resolveChoice(...) then toDF()"))
        return self._df

    # -- inspection
    def count(self) -> int:
        """Rows in the frame: ``frame.count()``."""
        return self._df.count()

    def schema(self):
        """The Spark ``StructType`` (Glue returns its own schema type): ``frame.schema()``."""
        return self._df.schema

    def printSchema(self) -> None:
        """Print the schema: ``frame.printSchema()``."""
        self._df.printSchema()

    def show(self, num_rows: int = 20) -> None:
        """Print the first rows: ``frame.show(5)``."""
        self._df.show(num_rows, truncate=False)

    def getNumPartitions(self) -> int:
        """Spark partitions: ``frame.getNumPartitions()``."""
        return self._df.rdd.getNumPartitions()

    def repartition(self, num_partitions: int, transformation_ctx: str = "", info: str = "",
                    stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        """``frame.repartition(4)``."""
        return self._new(self._df.repartition(num_partitions))

    def coalesce(self, num_partitions: int, shuffle: bool = False, transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> "DynamicFrame":
        """``frame.coalesce(1)``."""
        df = (self._df.repartition(num_partitions) if shuffle
              else self._df.coalesce(num_partitions))
        return self._new(df)

    # -- field transforms
    def apply_mapping(self, mappings: Any, case_sensitive: bool = False,
                      transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                      totalThreshold: int = 0) -> "DynamicFrame":
        """Rename, cast and nest fields: ``frame.apply_mapping([("a", "string", "b.c", "int")])``.

        The result has exactly the target columns, in mapping order, cast to the target type
        (a value that does not fit becomes null).  Dotted paths reach into structs; a dotted
        target builds a struct.  A source absent from this run's input gives a null column of
        the target type; if no source exists at all, the mapping is wrong: an error.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType
        if isinstance(mappings, (str, bytes)) or not isinstance(mappings, Sequence) \
                or not mappings:
            raise ConfigError("ApplyMapping needs mappings=[(source, source_type, target, "
                              "target_type), ...]")
        df = self._df
        tree: dict[str, Any] = {}
        found_any = False
        for m in mappings:
            if isinstance(m, (str, bytes)) or not isinstance(m, Sequence) or len(m) != 4:
                raise ConfigError(f"ApplyMapping mapping {m!r} must be a 4-tuple (source, "
                                  "source_type, target, target_type)")
            source, _source_type, target, target_type = m
            src, dst = split_path(source), split_path(target)
            dtype = glue_type(target_type, f"mapping {m!r}")
            hit = find_field(df.schema, src, case_sensitive)
            if hit is None:
                expr: "Column" = F.lit(None).cast(dtype or StringType())
            else:
                found_any = True
                expr, actual = hit
                if dtype is not None and actual != dtype:
                    expr = try_cast(expr, dtype)
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
                f"ApplyMapping: none of the source fields {[m[0] for m in mappings]} exist in "
                f"the frame (columns: {df.columns}); check the source names (headerless CSV "
                "columns are col0, col1, ...)")

        def build(node: dict[str, Any]) -> list["Column"]:
            return [(F.struct(*build(v)) if isinstance(v, dict) else v).alias(k)
                    for k, v in node.items()]

        return self._new(df.select(*build(tree)), transformation_ctx)

    def _top_level(self, paths: Any, call: str, hint: str) -> list[str]:
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence):
            raise ConfigError(f"{call} needs paths=[field, ...]")
        out = []
        for p in paths:
            parts = split_path(p)
            if len(parts) > 1:
                raise GlueUnsupportedError(unsupported_message(f"{call} of a nested field",
                                                               hint))
            out.append(parts[0])
        return out

    def select_fields(self, paths: Sequence[str], transformation_ctx: str = "", info: str = "",
                      stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        """Keep these top-level fields (absent ones are skipped):
        ``frame.select_fields(["id"])``."""
        names = self._top_level(paths, "SelectFields", "use ApplyMapping with a dotted source")
        cols = [hit[0] for n in names
                if (hit := find_field(self._df.schema, [n], case_sensitive=True)) is not None]
        return self._new(self._df.select(*cols), transformation_ctx)

    def drop_fields(self, paths: Sequence[str], transformation_ctx: str = "", info: str = "",
                    stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        """Drop these top-level fields: ``frame.drop_fields(["tmp"])``."""
        names = self._top_level(paths, "DropFields", "use ApplyMapping to rebuild the struct")
        return self._new(self._df.drop(*names), transformation_ctx)

    def rename_field(self, oldName: str, newName: str, transformation_ctx: str = "",
                     info: str = "", stageThreshold: int = 0,
                     totalThreshold: int = 0) -> "DynamicFrame":
        """``frame.rename_field("id", "org_id")``."""
        old, new = split_path(oldName), split_path(newName)
        if len(old) > 1 or len(new) > 1:
            raise GlueUnsupportedError(unsupported_message(
                "RenameField of a nested field", "use ApplyMapping with dotted paths"))
        if old[0] not in self._df.columns:
            raise ConfigError(f"RenameField: field {oldName!r} is not in the frame (columns: "
                              f"{self._df.columns})")
        return self._new(self._df.withColumnRenamed(old[0], new[0]), transformation_ctx)

    # -- choice types
    def resolveChoice(self, specs: Any = None, choice: str = "", database: str | None = None,
                      table_name: str | None = None, transformation_ctx: str = "",
                      info: str = "", stageThreshold: int = 0, totalThreshold: int = 0,
                      catalog_id: str | None = None) -> "DynamicFrame":
        """Resolve mixed-type columns: ``frame.resolveChoice(specs=[("id", "cast:long")])``.

        Frames have Spark types, so ``cast:T`` and ``project:T`` cast (a value that is not a
        ``T`` becomes null).  ``make_cols`` / ``make_struct`` split a string column that really
        holds mixed values (numbers and text, as JSON/CSV read as strings) into ``col_int``,
        ``col_string``, ... columns or a struct of them; a column that holds one kind of value
        is left alone.  ``choice="match_catalog"`` casts every column to the type of the
        catalog table ``database.table_name`` (its ``columns`` in the mapping file, or the Spark
        catalog).  ``choice`` without ``specs`` applies to every mixed string column.
        """
        if specs and choice:
            raise ConfigError("resolveChoice: give specs=[(field, action), ...] or choice=..., "
                              "not both")
        if not specs and not choice:
            raise ConfigError("resolveChoice needs specs=[(field, 'cast:long'), ...] or "
                              "choice='make_cols' | 'make_struct' | 'cast:T' | 'project:T' | "
                              "'match_catalog'")
        if catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message(
                "resolveChoice(catalog_id=...)", "there is one catalog: the Spark catalog plus "
                "SPARKMARK_GLUE_CATALOG"))
        df = self._df
        if str(choice or "").strip().lower() == "match_catalog":  # any case, as in Glue
            return self._new(match_catalog(self._df, database, table_name), transformation_ctx)
        if specs:
            if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence):
                raise ConfigError("resolveChoice specs must be a list of (field, action) pairs")
            pairs = []
            for spec in specs:
                if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence) \
                        or len(spec) != 2:
                    raise ConfigError(f"resolveChoice spec {spec!r} must be a (field, action) "
                                      "pair such as ('price', 'cast:double')")
                parts = split_path(spec[0])
                if len(parts) > 1:
                    raise GlueUnsupportedError(unsupported_message(
                        "resolveChoice of a nested field", "cast it with ApplyMapping and a "
                        "dotted source"))
                pairs.append((parts[0], choice_action(spec[1])))
        else:
            action = choice_action(choice)
            pairs = [(c, action) for c in mixed_columns(df, None)]
        names = [c for c, _ in pairs if c in df.columns]
        needs_kinds = [c for c, a in pairs if a in ("make_cols", "make_struct")
                       and c in df.columns]
        kinds = mixed_columns(df, needs_kinds) if needs_kinds else {}
        if not names:
            return self._new(df, transformation_ctx)
        actions = dict(pairs)
        cols: list["Column"] = []
        for c in df.columns:
            ref = df[quote(c)]
            act = actions.get(c)
            if act is None:
                cols.append(ref)
            elif act in ("make_cols", "make_struct"):
                present = kinds.get(c)
                if not present:
                    cols.append(ref)
                    continue
                parts_ = [(t, as_kind(ref, t)) for t in present]
                if act == "make_cols":
                    cols.extend(e.alias(f"{c}_{t}") for t, e in parts_)
                else:
                    from pyspark.sql import functions as F
                    cols.append(F.struct(*[e.alias(t) for t, e in parts_]).alias(c))
            else:
                dtype = glue_type(act.split(":", 1)[1], f"resolveChoice action {act!r}")
                cols.append(ref if dtype is None else try_cast(ref, dtype).alias(c))
        return self._new(df.select(*cols), transformation_ctx)

    # -- row functions (run as Python UDFs, like Spark runs them)
    def filter(self, f: Callable[[DynamicRecord], Any], transformation_ctx: str = "",
               info: str = "", stageThreshold: int = 0,
               totalThreshold: int = 0) -> "DynamicFrame":
        """Keep the records for which ``f(record)`` is true:
        ``frame.filter(lambda r: r["state"] == "CA")``."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType
        if not callable(f):
            raise ConfigError("Filter needs f=<function of a record returning True/False>")
        df = self._df
        if not df.columns:
            return self._new(df, transformation_ctx)

        def keep(row: Any) -> bool:
            return bool(f(_record(row)))

        udf = F.udf(keep, BooleanType())
        return self._new(df.filter(udf(F.struct(*[df[quote(c)] for c in df.columns]))),
                         transformation_ctx)

    def map(self, f: Callable[[DynamicRecord], Any], preservesPartitioning: bool = False,
            transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
            totalThreshold: int = 0) -> "DynamicFrame":
        """Apply ``f`` to every record; ``f`` returns the (changed) record:
        ``frame.map(lambda r: {**r, "total": r["qty"] * r["price"]})``.

        The new schema is inferred from every returned record (so ``f`` runs once for the
        inference and again when the frame is written); fields that are null everywhere
        become strings.  An empty frame keeps its schema.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import NullType, StringType
        if not callable(f):
            raise ConfigError("Map needs f=<function of a record returning a record>")
        df = self._df

        def apply(row: Any) -> dict:
            out = f(_record(row))
            if not isinstance(out, Mapping):
                raise TypeError(f"the Map function must return the record (a dict), not "
                                f"{type(out).__name__}")
            return dict(out)

        rdd = df.rdd.map(apply)
        spark = df.sparkSession
        key = "spark.sql.pyspark.inferNestedDictAsStruct.enabled"
        old = spark.conf.get(key, None)
        spark.conf.set(key, "true")
        try:
            if rdd.isEmpty():
                return self._new(df, transformation_ctx)
            first = rdd.first()
            new = spark.createDataFrame(rdd, samplingRatio=1.0)
        finally:
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
        order = [c for c in first if c in new.columns]
        order += sorted(c for c in new.columns if c not in order)
        cols = [(new[quote(c)].cast(StringType()).alias(c)
                 if isinstance(new.schema[c].dataType, NullType) else new[quote(c)])
                for c in order]
        return self._new(new.select(*cols) if cols else new.select(F.lit(None).alias("_")),
                         transformation_ctx)

    # -- frames together
    def join(self, paths1: Any, paths2: Any, frame2: "DynamicFrame",
             transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
             totalThreshold: int = 0) -> "DynamicFrame":
        """Inner equi-join: ``persons.join(["id"], ["person_id"], memberships)``.

        The result has the fields of both frames; a key named the same on both sides appears
        once.  Other fields named the same on both sides are an error (rename one first).
        """
        from pyspark.sql import functions as F
        if not isinstance(frame2, DynamicFrame):
            raise ConfigError(f"Join needs two DynamicFrames, not {type(frame2).__name__}")
        keys1 = [paths1] if isinstance(paths1, str) else list(paths1 or [])
        keys2 = [paths2] if isinstance(paths2, str) else list(paths2 or [])
        if not keys1 or len(keys1) != len(keys2):
            raise ConfigError(f"Join needs as many keys on each side (got {keys1} and {keys2})")
        left, right = self._df, frame2.toDF()
        for keys, d, side in ((keys1, left, "first"), (keys2, right, "second")):
            missing = [k for k in keys if k not in d.columns]
            if missing:
                raise ConfigError(f"Join: key(s) {missing} are not in the {side} frame "
                                  f"(columns: {d.columns})")
        shared = [k1 for k1, k2 in zip(keys1, keys2) if k1 == k2]
        clash = sorted((set(left.columns) & set(right.columns)) - set(shared))
        if clash:
            raise ConfigError(f"Join: both frames have field(s) {clash}; rename them on one "
                              "side first (frame.rename_field(old, new))")
        lt, rt = left.alias("sm_l"), right.alias("sm_r")
        cond = None
        for k1, k2 in zip(keys1, keys2):
            c = F.col(f"sm_l.{quote(k1)}") == F.col(f"sm_r.{quote(k2)}")
            cond = c if cond is None else cond & c
        cols = [F.col(f"sm_l.{quote(c)}").alias(c) for c in left.columns]
        cols += [F.col(f"sm_r.{quote(c)}").alias(c) for c in right.columns if c not in shared]
        return self._new(lt.join(rt, cond, "inner").select(*cols), transformation_ctx)

    def mergeDynamicFrame(self, stage_dynamic_frame: "DynamicFrame", primary_keys: Any,
                          transformation_ctx: str = "", options: Any = None, info: str = "",
                          stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        """Records of ``stage_dynamic_frame`` replace those with the same primary keys; the
        others of both frames are kept: ``base.mergeDynamicFrame(updates, ["id"])``."""
        if not isinstance(stage_dynamic_frame, DynamicFrame):
            raise ConfigError("mergeDynamicFrame needs the staging DynamicFrame")
        keys = [primary_keys] if isinstance(primary_keys, str) else list(primary_keys or [])
        stage = stage_dynamic_frame.toDF()
        for k in keys:
            if k not in self._df.columns or k not in stage.columns:
                raise ConfigError(f"mergeDynamicFrame: primary key {k!r} must be in both frames")
        if not keys:
            raise ConfigError("mergeDynamicFrame needs primary_keys=[field, ...]")
        kept = self._df.join(stage.select(*[quote(k) for k in keys]).distinct(), on=keys,
                             how="left_anti")
        return self._new(kept.unionByName(stage, allowMissingColumns=True), transformation_ctx)

    # -- nesting
    def unnest(self, transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
               totalThreshold: int = 0) -> "DynamicFrame":
        """Flatten structs into ``a.b`` fields (Glue's names): ``frame.unnest()``."""
        return self._new(flatten(self._df), transformation_ctx)

    def unbox(self, path: str, format: str, transformation_ctx: str = "", info: str = "",
              stageThreshold: int = 0, totalThreshold: int = 0,
              **options: Any) -> "DynamicFrame":
        """Parse a JSON string field into a struct: ``frame.unbox("payload", "json")``."""
        from pyspark.sql import functions as F
        if str(format).lower() != "json":
            raise GlueUnsupportedError(unsupported_message(
                f"unbox(format={format!r})", "parse the column with from_csv/regexp_extract on "
                "frame.toDF()"))
        parts = split_path(path)
        if len(parts) > 1 or parts[0] not in self._df.columns:
            raise ConfigError(f"unbox: {path!r} must be a top-level field of the frame "
                              f"(columns: {self._df.columns})")
        c = parts[0]
        spark = self._df.sparkSession
        texts = self._df.select(self._df[quote(c)]).where(self._df[quote(c)].isNotNull())
        schema = spark.read.json(texts.rdd.map(lambda r: r[0])).schema
        return self._new(self._df.withColumn(c, F.from_json(self._df[quote(c)], schema)),
                         transformation_ctx)

    def relationalize(self, root_table_name: str, staging_path: str, options: Any = None,
                      transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                      totalThreshold: int = 0) -> "DynamicFrameCollection":
        """Flatten into tables: ``frame.relationalize("root", "s3://tmp/")``.

        Structs become ``a.b`` fields; each array field ``a`` becomes a table
        ``<root>_a`` (columns ``id``, ``index`` and ``a.val`` or ``a.val.x``) and holds the
        ``id`` linking to it.  The ids are fixed by writing the frame to ``staging_path``
        (mapped like every path) once per level that has arrays.
        """
        from sparkmark.glue import paths
        if not isinstance(root_table_name, str) or not root_table_name:
            raise ConfigError("relationalize needs root_table_name, e.g. 'root'")
        if not isinstance(staging_path, str) or not staging_path.strip():
            raise ConfigError("relationalize needs staging_path, a folder for its work files")
        stage = paths.resolve(staging_path).rstrip("/") + f"/sparkmark-relationalize-" \
            f"{uuid.uuid4().hex}"
        out: dict[str, "DataFrame"] = {}
        relationalize_into(self._df, root_table_name, stage, out)
        return DynamicFrameCollection({k: self._new(v, k) for k, v in out.items()},
                                      self.glue_ctx)

    def split_fields(self, paths: Sequence[str], name1: str, name2: str,
                     transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                     totalThreshold: int = 0) -> "DynamicFrameCollection":
        """Two frames: the given fields (``name1``) and the rest (``name2``)."""
        keep = self._top_level(paths, "SplitFields", "use ApplyMapping")
        rest = [c for c in self._df.columns if c not in keep]
        return DynamicFrameCollection({
            name1: self._new(self._df.select(*[quote(c) for c in keep
                                               if c in self._df.columns]), name1),
            name2: self._new(self._df.select(*[quote(c) for c in rest]), name2)},
            self.glue_ctx)

    def split_rows(self, comparison_dict: Mapping[str, Mapping[str, Any]], name1: str,
                   name2: str, transformation_ctx: str = "", info: str = "",
                   stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrameCollection":
        """Rows matching every comparison (``{"age": {">": 10, "<=": 20}}``) go to ``name1``,
        the others (nulls included) to ``name2``."""
        from pyspark.sql import functions as F
        if not isinstance(comparison_dict, Mapping) or not comparison_dict:
            raise ConfigError("SplitRows needs comparison_dict={field: {op: value}}")
        cond = F.lit(True)
        for field, comps in comparison_dict.items():
            hit = find_field(self._df.schema, split_path(field), case_sensitive=True)
            if hit is None:
                raise ConfigError(f"SplitRows: field {field!r} is not in the frame")
            if not isinstance(comps, Mapping):
                raise ConfigError(f"SplitRows: {field!r} needs {{op: value}}, e.g. {{'>': 10}}")
            for op, value in comps.items():
                if op not in _OPS:
                    raise ConfigError(f"SplitRows: unknown comparison {op!r}; use "
                                      f"{', '.join(_OPS)}")
                cond = cond & getattr(hit[0], _OPS[op])(F.lit(value))
        match = F.coalesce(cond, F.lit(False))
        return DynamicFrameCollection({name1: self._new(self._df.filter(match), name1),
                                       name2: self._new(self._df.filter(~match), name2)},
                                      self.glue_ctx)

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("DynamicFrame", name, _HINTS)

    def __repr__(self) -> str:
        return f"DynamicFrame(name={self.name!r}, columns={self._df.columns})"


class DynamicFrameCollection:
    """Named frames, as ``relationalize`` and ``SplitFields`` return them.

        dfc = frame.relationalize("root", "s3://tmp/")
        for name in dfc.keys():
            dfc.select(name).toDF().show()
    """

    def __init__(self, dynamic_frames: Mapping[str, DynamicFrame], glue_ctx: Any = None):
        self._frames = dict(dynamic_frames)
        self.glue_ctx = glue_ctx

    def keys(self) -> list[str]:
        """The frames' names: ``dfc.keys()``."""
        return list(self._frames)

    def values(self) -> list[DynamicFrame]:
        """The frames: ``dfc.values()``."""
        return list(self._frames.values())

    def select(self, key: str, transformation_ctx: str = "") -> DynamicFrame:
        """One frame by name: ``dfc.select("root")``."""
        if key not in self._frames:
            raise ConfigError(f"no frame {key!r} in the collection; it has {self.keys()}")
        return self._frames[key]

    def map(self, callable: Callable[[DynamicFrame, str], DynamicFrame],
            transformation_ctx: str = "") -> "DynamicFrameCollection":
        """Apply ``callable(frame, transformation_ctx)`` to each frame."""
        return DynamicFrameCollection({k: callable(v, transformation_ctx)
                                       for k, v in self._frames.items()}, self.glue_ctx)

    def __getitem__(self, key: str) -> DynamicFrame:
        return self.select(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def __repr__(self) -> str:
        return f"DynamicFrameCollection({self.keys()})"


__getattr__ = module_getattr("sparkmark.glue.dynamicframe", {
    "DynamicFrameReader": "use glueContext.create_dynamic_frame",
    "DynamicFrameWriter": "use glueContext.write_dynamic_frame",
})
