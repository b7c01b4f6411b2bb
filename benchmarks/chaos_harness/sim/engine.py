"""A small in-memory stand-in for the Spark engine: a session with ``read``/``createDataFrame``,
lazy DataFrames over the simulated file system (read when an action runs), and a writer that
writes part files one at a time (a kill between two leaves partial output) with
``partitionBy``.  Only what sparkmark's files -> files path asks of Spark.

    spark = SimSpark(world)
    df = spark.read.format("json").load(["sim://lake/in/f1.json"])
    df.write.format("json").mode("overwrite").save("sim://lake/out/_sparkmark_staging/R/0")
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from chaos_harness.sim.simfs import SimFS
from chaos_harness.sim.world import World

PART_ROWS = 3  # rows per part file a write makes


def _type(col: str) -> Any:
    if col == "sm_snapshot_ts":
        return TimestampType()
    return LongType() if col in ("id", "day") else StringType()


class SimConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = str(value)

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class _Context:
    _jvm = None


class SimSpark:
    """The session: ``version``, ``conf``, ``read``, ``createDataFrame``."""

    version = "4.0.0"

    def __init__(self, world: World):
        self.world = world
        self.conf = SimConf()
        self.sparkContext = _Context()

    @property
    def read(self) -> "SimReader":
        return SimReader(self)

    def fs(self, path: str) -> SimFS:
        return SimFS(self.world, path)

    def createDataFrame(self, rows: Any, schema: Any = None) -> "SimDataFrame":  # noqa: N802
        cols = [f.name for f in schema.fields] if isinstance(schema, StructType) else []
        data = [dict(r) for r in rows]
        return SimDataFrame(self, cols, lambda: data, [])


class SimReader:
    def __init__(self, spark: SimSpark):
        self.spark, self.fmt, self.opts, self._schema = spark, "json", {}, None

    def format(self, fmt: str) -> "SimReader":
        self.fmt = fmt
        return self

    def options(self, **kw: Any) -> "SimReader":
        self.opts.update(kw)
        return self

    def option(self, k: str, v: Any) -> "SimReader":
        self.opts[k] = v
        return self

    def schema(self, s: Any) -> "SimReader":
        self._schema = s
        return self

    def load(self, paths: Any) -> "SimDataFrame":
        """Like Spark's JSON reader: the schema is inferred now (every file read once), the
        rows are read again by the action."""
        paths = [paths] if isinstance(paths, str) else [p.replace("\\", "") for p in paths]
        fs = self.spark.fs(paths[0])
        cols: list[str] = []
        for p in paths:
            for r in fs.read_file(p):
                cols.extend(c for c in r if c not in cols)
        if isinstance(self._schema, StructType):
            cols = [f.name for f in self._schema.fields]

        def rows() -> list[dict]:
            return [dict(r) for p in paths for r in fs.read_file(p)]
        return SimDataFrame(self.spark, sorted(cols), rows, paths)


class SimDataFrame:
    """A lazy DataFrame: ``compute()`` (the action) reads its files now."""

    def __init__(self, spark: SimSpark, columns: list[str], compute: Callable[[], list[dict]],
                 inputs: list[str], observer: Any = None):
        self.sparkSession = spark
        self.columns = list(columns)
        self.compute = compute
        self.inputs = inputs
        self.observer = observer

    @property
    def schema(self) -> StructType:
        return StructType([StructField(c, _type(c), True) for c in self.columns])

    def inputFiles(self) -> list[str]:  # noqa: N802
        return list(self.inputs)

    def _derive(self, columns: list[str], fn: Callable[[dict], dict]) -> "SimDataFrame":
        src = self.compute
        return SimDataFrame(self.sparkSession, columns, lambda: [fn(r) for r in src()],
                            self.inputs, self.observer)

    def selectExpr(self, *exprs: str) -> "SimDataFrame":  # noqa: N802
        consts: dict[str, Any] = {}
        for e in exprs:
            if e == "*":
                continue
            m = re.fullmatch(r"'(\w+)' AS (\w+)", e) or re.fullmatch(
                r"timestamp_millis\((\d+)L\) AS (\w+)", e)
            if m is None:
                raise NotImplementedError(f"sim engine: selectExpr {e!r}")
            consts[m.group(2)] = m.group(1)
        return self._derive(self.columns + [c for c in consts if c not in self.columns],
                            lambda r: {**r, **consts})

    def drop(self, *cols: str) -> "SimDataFrame":
        keep = [c for c in self.columns if c not in cols]
        return self._derive(keep, lambda r: {k: v for k, v in r.items() if k in keep})

    def observe(self, obs: Any, *_exprs: Any) -> "SimDataFrame":
        return SimDataFrame(self.sparkSession, self.columns, self.compute, self.inputs, obs)

    def unionByName(self, other: "SimDataFrame", allowMissingColumns: bool = False  # noqa: N803
                    ) -> "SimDataFrame":
        a, b = self.compute, other.compute
        cols = self.columns + [c for c in other.columns if c not in self.columns]
        return SimDataFrame(self.sparkSession, cols, lambda: a() + b(),
                            self.inputs + other.inputs, self.observer)

    @property
    def write(self) -> "SimWriter":
        return SimWriter(self)


class SimWriter:
    def __init__(self, df: SimDataFrame):
        self.df, self.fmt, self.parts, self.mode_ = df, "json", [], "append"

    def format(self, fmt: str) -> "SimWriter":
        self.fmt = fmt
        return self

    def mode(self, m: str) -> "SimWriter":
        self.mode_ = m
        return self

    def options(self, **_kw: Any) -> "SimWriter":
        return self

    def partitionBy(self, *cols: str) -> "SimWriter":  # noqa: N802
        self.parts = list(cols)
        return self

    def save(self, path: str) -> None:
        """The action: read the input, then write part files one by one (a yield point
        each), then ``_SUCCESS``."""
        rows = self.df.compute()
        fs = self.df.sparkSession.fs(path)
        if self.mode_ == "overwrite":
            fs.delete(path)
            fs.mkdirs(path)
        groups: dict[str, list[dict]] = {}
        for r in sorted(rows, key=lambda r: r.get("id", 0)):
            sub = "/".join(f"{c}={r.get(c)}" for c in self.parts)
            groups.setdefault(sub, []).append({k: v for k, v in r.items() if k not in self.parts})
        n = 0
        for sub, group in sorted(groups.items()):
            for at in range(0, len(group), PART_ROWS):
                where = f"{path}/{sub}" if sub else path
                fs.write_file(f"{where}/part-{n:05d}.{self.fmt}", tuple(group[at:at + PART_ROWS]))
                n += 1
        fs.write_file(f"{path}/_SUCCESS", ())
        if self.df.observer is not None:
            self.df.observer.rows = len(rows)


class SimObservation:
    """``pyspark.sql.Observation`` while simulating: the writer sets the row count."""

    def __init__(self, name: str = "") -> None:
        self.name, self.rows = name, 0

    @property
    def get(self) -> dict[str, int]:
        return {"rows": self.rows}


class _Expr:
    def alias(self, _name: str) -> "_Expr":
        return self


@contextmanager
def patched_pyspark() -> Iterator[None]:
    """PySpark's few JVM-bound helpers on the path (``Observation``, ``F.count``, ``F.lit``)
    answered by the simulated engine, restored afterwards."""
    import pyspark.sql as ps
    import pyspark.sql.functions as F
    saved = (ps.Observation, F.count, F.lit)
    ps.Observation = SimObservation  # type: ignore[misc,assignment]
    F.count = lambda *_a, **_k: _Expr()  # type: ignore[assignment]
    F.lit = lambda *_a, **_k: _Expr()  # type: ignore[assignment]
    try:
        yield
    finally:
        ps.Observation, F.count, F.lit = saved  # type: ignore[misc]
