"""Glue transforms: ``Transform.apply(frame=..., ...)`` calls the ``DynamicFrame`` method.

``from sparkmark.glue.transforms import *`` brings every Glue transform name into scope, like
``from awsglue.transforms import *``.  As in awsglue, each transform calls the frame's method
(``ApplyMapping`` -> ``frame.apply_mapping``, ``Join`` -> ``frame1.join``, ...), so this module
imports :mod:`sparkmark.glue.dynamicframe` and never the other way round.  The transforms
sparkmark does not implement raise :class:`GlueUnsupportedError` when applied, naming the
transform and the DataFrame way.

    mapped = ApplyMapping.apply(frame=src, mappings=[("col0", "string", "name", "string")])
    typed = ResolveChoice.apply(frame=mapped, specs=[("id", "cast:long")])
    clean = DropNullFields.apply(frame=typed)
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.glue._common import GlueUnsupportedError, module_getattr, unsupported_message
from sparkmark.glue.dynamicframe import DynamicFrame, DynamicFrameCollection
from sparkmark.glue.fields import quote, split_path  # noqa: F401 - split_path: re-exported for old imports


class GlueTransform:
    """Base class: ``Transform.apply(frame=..., ...)`` or ``Transform()(...)``.

        out = SelectFields.apply(frame=src, paths=["id", "name"])
    """

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the transform: ``ApplyMapping.apply(frame=f, mappings=[...])``."""
        return cls()(*args, **kwargs)

    @classmethod
    def name(cls) -> str:
        """The transform's name: ``ApplyMapping.name() == "ApplyMapping"``."""
        return cls.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def _frame(frame: Any, transform: str) -> DynamicFrame:
    if not isinstance(frame, DynamicFrame):
        raise ConfigError(f"{transform}.apply needs frame=<DynamicFrame>, not "
                          f"{type(frame).__name__}; wrap a DataFrame with "
                          "DynamicFrame.fromDF(df, glueContext, name)")
    return frame


class ApplyMapping(GlueTransform):
    """``ApplyMapping.apply(frame=f, mappings=[(src, src_type, target, target_type), ...])``;
    see :meth:`DynamicFrame.apply_mapping`."""

    def __call__(self, frame: Any = None, mappings: Any = None, case_sensitive: bool = False,
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "ApplyMapping").apply_mapping(
            mappings, case_sensitive=case_sensitive, transformation_ctx=transformation_ctx)


class SelectFields(GlueTransform):
    """``SelectFields.apply(frame=f, paths=["id", "name"])`` (absent fields are skipped)."""

    def __call__(self, frame: Any = None, paths: Sequence[str] = (), transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "SelectFields").select_fields(paths, transformation_ctx)


class DropFields(GlueTransform):
    """``DropFields.apply(frame=f, paths=["tmp"])``."""

    def __call__(self, frame: Any = None, paths: Sequence[str] = (), transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "DropFields").drop_fields(paths, transformation_ctx)


class RenameField(GlueTransform):
    """``RenameField.apply(frame=f, old_name="id", new_name="org_id")``."""

    def __call__(self, frame: Any = None, old_name: str = "", new_name: str = "",
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "RenameField").rename_field(old_name, new_name,
                                                         transformation_ctx)


class ResolveChoice(GlueTransform):
    """``ResolveChoice.apply(frame=f, specs=[("id", "cast:long")])`` or
    ``choice="make_cols" | "make_struct" | "cast:T" | "project:T" | "match_catalog"`` (with
    ``database=``, ``table_name=``); see :meth:`DynamicFrame.resolveChoice`."""

    def __call__(self, frame: Any = None, specs: Any = None, choice: str = "",
                 database: str | None = None, table_name: str | None = None,
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0, catalog_id: str | None = None) -> DynamicFrame:
        return _frame(frame, "ResolveChoice").resolveChoice(
            specs=specs, choice=choice, database=database, table_name=table_name,
            transformation_ctx=transformation_ctx, catalog_id=catalog_id)


class DropNullFields(GlueTransform):
    """``DropNullFields.apply(frame=f)``: drop the top-level fields that are null in every
    record (one Spark job counts them).  A frame with no records keeps its fields, so an empty
    incremental run does not lose its columns."""

    def __call__(self, frame: Any = None, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrame:
        from pyspark.sql import functions as F
        frame = _frame(frame, "DropNullFields")
        df = frame.toDF()
        if not df.columns:
            return frame
        row = df.agg(F.count(F.lit(1)).alias("sm_rows"),
                     *[F.count(df[quote(c)]).alias(f"c{i}")
                       for i, c in enumerate(df.columns)]).collect()[0]
        if row["sm_rows"] == 0:
            return frame
        null = [c for i, c in enumerate(df.columns) if row[f"c{i}"] == 0]
        return frame.drop_fields([f"`{c}`" for c in null], transformation_ctx)


class Join(GlueTransform):
    """``Join.apply(frame1, frame2, keys1, keys2)``: inner equi-join; see
    :meth:`DynamicFrame.join`."""

    def __call__(self, frame1: Any = None, frame2: Any = None, keys1: Any = None,
                 keys2: Any = None, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame1, "Join").join(keys1, keys2, _frame(frame2, "Join"),
                                           transformation_ctx)


class Filter(GlueTransform):
    """``Filter.apply(frame=f, f=lambda rec: rec["age"] > 20)``; runs as a Python UDF."""

    def __call__(self, frame: Any = None, f: Callable | None = None,
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "Filter").filter(f, transformation_ctx)  # type: ignore[arg-type]


class Map(GlueTransform):
    """``Map.apply(frame=f, f=lambda rec: {**rec, "x": 1})``; see :meth:`DynamicFrame.map`."""

    def __call__(self, frame: Any = None, f: Callable | None = None,
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "Map").map(f, transformation_ctx=transformation_ctx)  # type: ignore


class Relationalize(GlueTransform):
    """``Relationalize.apply(frame=f, staging_path="s3://tmp/", name="root")``: a
    :class:`DynamicFrameCollection`; see :meth:`DynamicFrame.relationalize`."""

    def __call__(self, frame: Any = None, staging_path: str = "", name: str = "roottable",
                 options: Any = None, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrameCollection:
        return _frame(frame, "Relationalize").relationalize(name, staging_path, options,
                                                            transformation_ctx)


class SplitFields(GlueTransform):
    """``SplitFields.apply(frame=f, paths=["a"], name1="a_part", name2="rest")``."""

    def __call__(self, frame: Any = None, paths: Sequence[str] = (), name1: str | None = None,
                 name2: str | None = None, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrameCollection:
        frame = _frame(frame, "SplitFields")
        return frame.split_fields(paths, name1 or f"{frame.name}_1",
                                  name2 or f"{frame.name}_2", transformation_ctx)


class SplitRows(GlueTransform):
    """``SplitRows.apply(frame=f, comparison_dict={"age": {">": 20}}, name1="old",
    name2="young")``."""

    def __call__(self, frame: Any = None, comparison_dict: Mapping | None = None,
                 name1: str = "frame1", name2: str = "frame2", transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrameCollection:
        return _frame(frame, "SplitRows").split_rows(comparison_dict or {}, name1, name2,
                                                     transformation_ctx)


class Unbox(GlueTransform):
    """``Unbox.apply(frame=f, path="payload", format="json")``: parse a JSON string field."""

    def __call__(self, frame: Any = None, path: str = "", format: str = "json",
                 transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0, **options: Any) -> DynamicFrame:
        return _frame(frame, "Unbox").unbox(path, format, transformation_ctx, **options)


class UnnestFrame(GlueTransform):
    """``UnnestFrame.apply(frame=f)``: structs become ``a.b`` fields."""

    def __call__(self, frame: Any = None, transformation_ctx: str = "", info: str = "",
                 stageThreshold: int = 0, totalThreshold: int = 0) -> DynamicFrame:
        return _frame(frame, "UnnestFrame").unnest(transformation_ctx)


class SelectFromCollection(GlueTransform):
    """``SelectFromCollection.apply(dfc=collection, key="root")``."""

    def __call__(self, dfc: Any = None, key: str = "", transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> DynamicFrame:
        if not isinstance(dfc, DynamicFrameCollection):
            raise ConfigError("SelectFromCollection needs dfc=<DynamicFrameCollection>")
        return dfc.select(key, transformation_ctx)


_UNSUPPORTED = {
    "ErrorsAsDynamicFrame": "sparkmark reads fail fast; use format_options {'mode': "
                            "'PERMISSIVE'} to keep malformed records",
    "FillMissingValues": "use frame.toDF().fillna(...)",
    "FindIncrementalMatches": None, "FindMatches": None,
    "FlatMap": "use the DataFrame API on frame.toDF()",
    "MapToCollection": "loop over your frames in Python",
    "Spigot": "write a sample with frame.toDF().limit(n)",
    "DropDuplicates": "use frame.toDF().dropDuplicates(...)",
    "EvaluateDataQuality": None,
}


def _unsupported_transform(name: str, hint: str | None) -> type:
    def __call__(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        raise GlueUnsupportedError(unsupported_message(f"{name}.apply", hint))
    return type(name, (GlueTransform,), {"__call__": __call__,
                                         "__doc__": f"Not supported by sparkmark.glue: "
                                                    f"``{name}.apply(...)`` raises "
                                                    f"GlueUnsupportedError. "
                                                    f"{hint or ''}"})


for _name, _hint in _UNSUPPORTED.items():
    globals()[_name] = _unsupported_transform(_name, _hint)

__all__ = ["GlueTransform", "ApplyMapping", "SelectFields", "DropFields", "RenameField",
           "ResolveChoice", "DropNullFields", "Join", "Filter", "Map", "Relationalize",
           "SplitFields", "SplitRows", "Unbox", "UnnestFrame", "SelectFromCollection",
           "DynamicFrameCollection", *_UNSUPPORTED]

__getattr__ = module_getattr("sparkmark.glue.transforms", {})
