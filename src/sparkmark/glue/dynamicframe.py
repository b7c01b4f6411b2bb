"""``DynamicFrame``: a thin wrapper around a Spark DataFrame.

Glue's DynamicFrame is schema-on-read with "choice" types; here it is a DataFrame with Spark's
schema.  ``toDF()``, ``fromDF()``, ``count()``, ``schema()`` (a Spark ``StructType``),
``printSchema()``, ``show()`` and a few field transforms work; anything else raises
:class:`GlueUnsupportedAttributeError` with the DataFrame way to do it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError
from ._common import (GlueUnsupportedError, attribute_error, module_getattr,
                      unsupported_message)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_HINTS = {
    "resolveChoice": "sparkmark frames have Spark types, no choice types: cast columns with "
                     "frame.toDF().withColumn(name, col(name).cast(type))",
    "relationalize": "flatten nested columns with the DataFrame API (explode, select 'a.b')",
    "unbox": "parse the column with from_json on frame.toDF()",
    "unnest": "select the nested fields with frame.toDF().select('a.b')",
    "filter": "use DynamicFrame.fromDF(frame.toDF().filter(...), glueContext, name)",
    "map": "use the DataFrame API on frame.toDF()",
    "join": "use frame.toDF().join(...)",
    "spigot": "write a sample with frame.toDF().limit(n) and job.write",
    "errorsCount": "sparkmark reads fail fast on malformed records (mode=FAILFAST); there are "
                   "no error records to count",
    "errorsAsDynamicFrame": "sparkmark reads fail fast on malformed records; use "
                            "format_options {'mode': 'PERMISSIVE'} to keep them",
    "stageErrorsCount": "sparkmark keeps no error records",
    "split_fields": "select the column groups with frame.toDF().select(...)",
    "split_rows": "filter frame.toDF() twice",
    "write": "use glueContext.write_dynamic_frame.from_options(frame=...)",
    "assertErrorThreshold": "sparkmark keeps no error records",
}


class DynamicFrame:
    """A named Spark DataFrame with Glue's DynamicFrame methods."""

    def __init__(self, df: "DataFrame", glue_ctx: Any = None, name: str = ""):
        from pyspark.sql import DataFrame
        if not isinstance(df, DataFrame):
            raise ConfigError(f"DynamicFrame wraps a Spark DataFrame, not {type(df).__name__}; "
                              "use DynamicFrame.fromDF(df, glueContext, name)")
        self._df = df
        self.glue_ctx = glue_ctx
        self.name = name or ""

    # -- conversions
    @staticmethod
    def fromDF(dataframe: "DataFrame", glue_ctx: Any = None, name: str = "") -> "DynamicFrame":
        return DynamicFrame(dataframe, glue_ctx, name)

    def toDF(self, options: Any = None) -> "DataFrame":
        if options:
            raise GlueUnsupportedError(unsupported_message(
                "DynamicFrame.toDF(options=...)", "ResolveOption specs do not apply (there are "
                "no choice types); call toDF() and cast columns"))
        return self._df

    # -- inspection
    def count(self) -> int:
        return self._df.count()

    def schema(self):
        """The Spark ``StructType`` (Glue returns its own schema type)."""
        return self._df.schema

    def printSchema(self) -> None:
        self._df.printSchema()

    def show(self, num_rows: int = 20) -> None:
        self._df.show(num_rows, truncate=False)

    def getNumPartitions(self) -> int:
        return self._df.rdd.getNumPartitions()

    # -- simple transforms
    def apply_mapping(self, mappings: Sequence[Sequence[str]], case_sensitive: bool = False,
                      transformation_ctx: str = "", info: str = "", stageThreshold: int = 0,
                      totalThreshold: int = 0) -> "DynamicFrame":
        from .transforms import ApplyMapping
        return ApplyMapping.apply(frame=self, mappings=mappings, case_sensitive=case_sensitive,
                                  transformation_ctx=transformation_ctx)

    def select_fields(self, paths: Sequence[str], transformation_ctx: str = "", info: str = "",
                      stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        from .transforms import SelectFields
        return SelectFields.apply(frame=self, paths=paths)

    def drop_fields(self, paths: Sequence[str], transformation_ctx: str = "", info: str = "",
                    stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        from .transforms import DropFields
        return DropFields.apply(frame=self, paths=paths)

    def rename_field(self, oldName: str, newName: str, transformation_ctx: str = "",
                     info: str = "", stageThreshold: int = 0,
                     totalThreshold: int = 0) -> "DynamicFrame":
        from .transforms import RenameField
        return RenameField.apply(frame=self, old_name=oldName, new_name=newName)

    def repartition(self, num_partitions: int, transformation_ctx: str = "", info: str = "",
                    stageThreshold: int = 0, totalThreshold: int = 0) -> "DynamicFrame":
        return DynamicFrame(self._df.repartition(num_partitions), self.glue_ctx, self.name)

    def coalesce(self, num_partitions: int, shuffle: bool = False, transformation_ctx: str = "",
                 info: str = "", stageThreshold: int = 0,
                 totalThreshold: int = 0) -> "DynamicFrame":
        df = (self._df.repartition(num_partitions) if shuffle
              else self._df.coalesce(num_partitions))
        return DynamicFrame(df, self.glue_ctx, self.name)

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("DynamicFrame", name, _HINTS)

    def __repr__(self) -> str:
        return f"DynamicFrame(name={self.name!r}, columns={self._df.columns})"


__getattr__ = module_getattr("sparkmark.glue.dynamicframe", {
    "DynamicFrameCollection": "keep the frames in a Python dict",
    "DynamicFrameReader": "use glueContext.create_dynamic_frame",
    "DynamicFrameWriter": "use glueContext.write_dynamic_frame",
})
