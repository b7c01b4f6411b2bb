"""A small in-memory stand-in for the Spark engine: a session with ``read``/``createDataFrame``,
lazy DataFrames over the simulated file system (read when an action runs), and a writer that
writes part files one at a time (a kill between two leaves partial output) with
``partitionBy``.  Only what sparkmark's files -> files path and its pipeline path (a module
reading an upstream target folder, ``ctx.window``'s filter on the load stamp, a rollback's
check by ``input_file_name``) ask of Spark: columns are a small expression model
(:class:`SimColumn`: a column, a literal, ``timestamp_millis``, comparisons, ``&``, ``isin``),
a timestamp is its epoch ms.

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
INPUT_FILE = "\0input_file"  # the hidden field of a read row: the file it came from


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
        """Like Spark's JSON reader: the schema is inferred now (every file read once) unless
        given, the rows are read again by the action.  A folder (one path, as a module reads
        an upstream target) is listed now, recursively, skipping names starting with ``_`` or
        ``.``; a missing folder fails, an empty one fails without a schema (Spark cannot infer
        it) and is empty with one."""
        one = isinstance(paths, str)
        paths = [paths] if one else [p.replace("\\", "") for p in paths]
        fs = self.spark.fs(paths[0])
        if one and not fs.is_file(paths[0]):
            root = paths[0].rstrip("/")
            if not fs.exists(root):
                raise FileNotFoundError(f"[PATH_NOT_FOUND] Path does not exist: {root} (sim)")
            paths = [f for f in fs.files(root)
                     if not any(part.startswith(("_", "."))
                                for part in f[len(root) + 1:].split("/"))]
            if not paths and self._schema is None:
                raise ValueError("[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for JSON "
                                 "(sim): the folder has no data files")
        schema = _parse_schema(self._schema)
        cols: list[str] = []
        if schema is None:
            for p in paths:
                for r in fs.read_file(p):
                    cols.extend(c for c in r if c not in cols)
            cols = sorted(cols)
        else:
            cols = schema

        def rows() -> list[dict]:
            return [{**{c: r.get(c) for c in cols}, INPUT_FILE: p}
                    for p in paths for r in fs.read_file(p)]
        return SimDataFrame(self.spark, cols, rows, paths)


def _parse_schema(schema: Any) -> list[str] | None:
    """The column names of a reader's schema (a StructType or DDL text such as
    ``"id BIGINT, v STRING"``), None when none was given."""
    if schema is None:
        return None
    if isinstance(schema, StructType):
        return [f.name for f in schema.fields]
    return [part.split()[0] for part in str(schema).split(",") if part.strip()]


class SimColumn:
    """A column expression evaluated on one row (a dict): a column by name, a literal,
    ``timestamp_millis`` (a timestamp is its epoch ms), comparisons, ``&`` and ``isin``."""

    def __init__(self, fn: Callable[[dict], Any], name: str = "col"):
        self.fn, self.name = fn, name

    def eval(self, row: dict) -> Any:
        return self.fn(row)

    def alias(self, name: str) -> "SimColumn":
        return SimColumn(self.fn, name)

    def _cmp(self, other: Any, op: Callable[[Any, Any], bool]) -> "SimColumn":
        right = other if isinstance(other, SimColumn) else lit(other)

        def fn(r: dict) -> Any:
            a, b = self.eval(r), right.eval(r)
            return None if a is None or b is None else op(a, b)
        return SimColumn(fn)

    def __gt__(self, o: Any) -> "SimColumn":
        return self._cmp(o, lambda a, b: a > b)

    def __ge__(self, o: Any) -> "SimColumn":
        return self._cmp(o, lambda a, b: a >= b)

    def __lt__(self, o: Any) -> "SimColumn":
        return self._cmp(o, lambda a, b: a < b)

    def __le__(self, o: Any) -> "SimColumn":
        return self._cmp(o, lambda a, b: a <= b)

    def __and__(self, o: "SimColumn") -> "SimColumn":
        return SimColumn(lambda r: bool(self.eval(r)) and bool(o.eval(r)))

    def isin(self, *values: Any) -> "SimColumn":
        vals = set(values[0]) if len(values) == 1 and isinstance(values[0], (list, tuple,
                                                                              set)) else set(values)
        return SimColumn(lambda r: self.eval(r) in vals)


def col(name: str) -> SimColumn:
    return SimColumn(lambda r: r.get(name), name)


def lit(value: Any) -> SimColumn:
    v = getattr(value, "value", value)  # (a lit of a lit)
    return SimColumn(lambda r: v, "lit")


def timestamp_millis(c: SimColumn) -> SimColumn:
    return SimColumn(lambda r: None if c.eval(r) is None else int(c.eval(r)), "ts")


def input_file_name() -> SimColumn:
    return SimColumn(lambda r: r.get(INPUT_FILE, ""), "input_file_name")


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
            m = re.fullmatch(r"'(\w+)' AS (\w+)", e)
            t = re.fullmatch(r"timestamp_millis\((\d+)L\) AS (\w+)", e)
            if m is not None:
                consts[m.group(2)] = m.group(1)
            elif t is not None:
                consts[t.group(2)] = int(t.group(1))  # a timestamp: its epoch ms
            else:
                raise NotImplementedError(f"sim engine: selectExpr {e!r}")
        return self._derive(self.columns + [c for c in consts if c not in self.columns],
                            lambda r: {**r, **consts})

    def withColumns(self, cols: dict[str, SimColumn]) -> "SimDataFrame":  # noqa: N802
        """Columns added, or replaced in place (as Spark does)."""
        return self._derive(self.columns + [c for c in cols if c not in self.columns],
                            lambda r: {**r, **{k: c.eval(r) for k, c in cols.items()}})

    def withColumn(self, name: str, c: SimColumn) -> "SimDataFrame":  # noqa: N802
        return self.withColumns({name: c})

    def where(self, cond: SimColumn) -> "SimDataFrame":
        src = self.compute
        return SimDataFrame(self.sparkSession, self.columns,
                            lambda: [r for r in src() if cond.eval(r)], self.inputs,
                            self.observer)

    filter = where

    def select(self, *cols: Any) -> "SimDataFrame":
        exprs = [c if isinstance(c, SimColumn) else col(c) for c in cols]
        names = [c.name for c in exprs]
        return self._derive(names, lambda r: {**{n: c.eval(r) for n, c in zip(names, exprs)},
                                              INPUT_FILE: r.get(INPUT_FILE)})

    def distinct(self) -> "SimDataFrame":
        src, cols = self.compute, self.columns

        def rows() -> list[dict]:
            seen, out = set(), []
            for r in src():
                key = tuple(r.get(c) for c in cols)
                if key not in seen:
                    seen.add(key)
                    out.append({c: r.get(c) for c in cols})
            return out
        return SimDataFrame(self.sparkSession, cols, rows, self.inputs, self.observer)

    def collect(self) -> list[dict]:
        """The action: the rows (dicts, which answer ``row["col"]`` as a Row does)."""
        return [{c: r.get(c) for c in self.columns} for r in self.compute()]

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
        cols = [c for c in self.df.columns if c not in self.parts]
        for r in sorted(rows, key=lambda r: r.get("id", 0)):
            sub = "/".join(f"{c}={r.get(c)}" for c in self.parts)
            groups.setdefault(sub, []).append({c: r.get(c) for c in cols})
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


#: the ``pyspark.sql.functions`` the product's paths call, as the simulated engine answers them
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "count": lambda *_a, **_k: SimColumn(lambda r: None, "count"),
    "lit": lit, "col": col, "timestamp_millis": timestamp_millis,
    "input_file_name": input_file_name,
}


@contextmanager
def patched_pyspark() -> Iterator[None]:
    """PySpark's few JVM-bound helpers on the path (``Observation`` and :data:`FUNCTIONS`)
    answered by the simulated engine, restored afterwards."""
    import pyspark.sql as ps
    import pyspark.sql.functions as F
    saved_obs = ps.Observation
    saved = {name: getattr(F, name) for name in FUNCTIONS}
    ps.Observation = SimObservation  # type: ignore[misc,assignment]
    for name, fn in FUNCTIONS.items():
        setattr(F, name, fn)
    try:
        yield
    finally:
        ps.Observation = saved_obs  # type: ignore[misc]
        for name, fn in saved.items():
            setattr(F, name, fn)
