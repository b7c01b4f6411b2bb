"""Declaring a pipeline: its modules, their dependencies, and the checks on both.

What ``@p.module(...)`` records (:class:`Module`), what a module function gets
(:class:`ModuleContext`), the pipeline settings' and module declarations' validation, the
dependency order, and the config each module run stores in its ledger row.  Example::

    check_settings("overwatch", max_days_to_load=5, timezone="UTC", primordial_date=None)
    make = declare_module({}, "overwatch", id=1004, name="Bronze", layer="bronze",
                          target="data/bronze")
    m = make(lambda ctx: ctx.spark.range(1))       # a Module
    order("overwatch", {m.id: m})                   # [1004]
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from sparkmark.core.errors import PipelineError
from sparkmark.core.formats import WRITE_FORMATS
from sparkmark.lifecycle.job import Job
from sparkmark.planning.windows import get_zone, parse_duration, parse_time, topo_order

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PIPELINE_RUN_ID_COL = "sm_pipeline_run_id"
SNAPSHOT_COL = "sm_snapshot_ts"       # the load stamp every module's output carries
RUN_ID_COL = "sm_run_id"
OUTPUT_CTX = "sm_module_output"
LAYER_RANK = {"bronze": 0, "silver": 1, "gold": 2, "presentation": 3, "platinum": 3}
FILE_FORMATS = WRITE_FORMATS
#: a module whose format is this writes to an Apache Iceberg table (its target is a table name)
TABLE_FORMAT = "iceberg"
#: a module whose format is this appends to a Delta Lake table (its target: a path or a name)
DELTA_FORMAT = "delta"
#: what ``@p.module(format=...)`` accepts
MODULE_FORMATS: tuple[str, ...] = (*WRITE_FORMATS, TABLE_FORMAT, DELTA_FORMAT)


# ---------------------------------------------------------------------- module definition
@dataclass(frozen=True)
class Module:
    """One module of a pipeline, as ``@p.module(...)`` declared it.

    Example: ``p.modules[1004].target`` is the folder the module's output is published to.
    """

    id: int
    name: str
    layer: str
    target: str
    depends_on: tuple[int, ...]
    format: str
    fn: Callable[["ModuleContext"], "DataFrame"]
    partition_by: tuple[str, ...] = ()
    take_over_from: str | None = None   # the job whose target (and window) this module took


@dataclass
class ModuleContext:
    """What a module function gets.  Example::

        @p.module(id=2010, name="Silver_Jobs", layer="silver", target="silver/jobs",
                  depends_on=[1004])
        def jobs(ctx: ModuleContext):
            return ctx.window(ctx.spark.read.parquet("bronze/audit"))

    ``from_ts``/``until_ts``: the module's window ``[from, until)`` in epoch ms UTC;
    ``run_id``: the pipeline run id; ``module_run_id``: this module run's id (``job.run_id``);
    ``snapshot_ts``: the pipeline snapshot (epoch ms); ``job``: the module's running
    :class:`~sparkmark.lifecycle.job.Job` (bookmarked reads: ``ctx.job.read.files(...)``).
    """

    spark: "SparkSession"
    from_ts: int
    until_ts: int
    run_id: str
    snapshot_ts: int
    job: Job
    module: Module
    pipeline: str
    timezone: str

    @property
    def module_run_id(self) -> str:
        """This module run's id (the ledger's ``run_id``; stamped as ``sm_run_id``)."""
        return self.job.run_identity()[1]

    @property
    def from_time(self) -> datetime:
        return datetime.fromtimestamp(self.from_ts / 1000, tz=dt_timezone.utc)

    @property
    def until_time(self) -> datetime:
        return datetime.fromtimestamp(self.until_ts / 1000, tz=dt_timezone.utc)

    def in_window(self, column: "str | Column", df: "DataFrame | None" = None, *,
                  epoch_ms: bool | None = None, lookback: Any = None) -> "Column":
        """``from - lookback <= column < until`` on event time.

        ``column``: a timestamp column, or numbers of epoch ms -- say so with ``epoch_ms=True``
        or pass ``df`` so the type can be looked up.  ``lookback`` (a ``timedelta``, ms, or
        text like ``"6 hours"``) widens the window backwards to catch late events; rows in the
        lookback were already seen by an earlier run, so deduplicate them.

            df.where(ctx.in_window("ts_ms", epoch_ms=True))
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import NumericType
        col = F.col(column) if isinstance(column, str) else column
        start = self.from_ts - (0 if lookback is None else parse_duration(lookback))
        if epoch_ms is None:
            epoch_ms = (df is not None and isinstance(column, str)
                        and isinstance(df.schema[column].dataType, NumericType))
        if epoch_ms:
            return (col >= F.lit(start)) & (col < F.lit(self.until_ts))
        return ((col >= F.timestamp_millis(F.lit(start)))
                & (col < F.timestamp_millis(F.lit(self.until_ts))))

    def in_stamp_window(self) -> "Column":
        """``from < sm_snapshot_ts <= until``: the upstream rows loaded in this window.

        Stamps are pipeline snapshots, and a window never ends after its snapshot, so the
        comparison is ``(from, until]``: rows a dependency wrote earlier in *this* pipeline run
        (stamped with this snapshot) belong to this window, and every upstream row to exactly
        one window of this module, however late its events are.
        """
        from pyspark.sql import functions as F
        col = F.col(SNAPSHOT_COL)
        return ((col > F.timestamp_millis(F.lit(self.from_ts)))
                & (col <= F.timestamp_millis(F.lit(self.until_ts))))

    def window(self, df: "DataFrame", column: str | None = None, *,
               lookback: Any = None) -> "DataFrame":
        """The rows of ``df`` in this module's window.

        Without ``column`` (recommended for an upstream module's target): the rows whose load
        stamp ``sm_snapshot_ts`` is in the window -- every upstream row reaches this module
        exactly once, late events included.  With ``column``: the rows whose event time
        (timestamp, or epoch ms) is in ``[from - lookback, until)``.

            silver = ctx.window(ctx.spark.read.parquet("data/bronze/orders"))
            recent = ctx.window(events, "event_time", lookback="1 day")
        """
        if column is None:
            if lookback is not None:
                raise PipelineError("lookback applies to an event-time column: "
                                    "ctx.window(df, 'event_time', lookback='1 day'); the stamp "
                                    "window needs none (late rows are not missed)")
            if SNAPSHOT_COL not in df.columns:
                raise PipelineError(
                    f"ctx.window(df) windows on the upstream load stamp {SNAPSHOT_COL}, and this "
                    f"DataFrame has no such column (columns: {', '.join(df.columns)}); read an "
                    "upstream module's target, or give an event-time column: "
                    "ctx.window(df, 'event_time')")
            return df.where(self.in_stamp_window())
        return df.where(self.in_window(column, df, lookback=lookback))



# ---------------------------------------------------------------------- the checks
def check_settings(name: str, *, max_days_to_load: int, timezone: str,
                   primordial_date: Any) -> None:
    """Refuse a bad pipeline name, day count, timezone or primordial date (``Pipeline()``'s
    checks).

    Example: ``check_settings("overwatch", max_days_to_load=5, timezone="UTC",
    primordial_date="2024-01-01")``
    """
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or "." in name:
        raise PipelineError(f"bad pipeline name {name!r}: give a non-empty name of at most "
                            "200 characters without '.'")
    if isinstance(max_days_to_load, bool) or not isinstance(max_days_to_load, int) \
            or max_days_to_load < 1:
        raise PipelineError(f"max_days_to_load must be a whole number of days >= 1, not "
                            f"{max_days_to_load!r}")
    get_zone(timezone)
    if primordial_date is not None:
        parse_time(primordial_date, timezone, what="primordial_date")


def declare_module(modules: Mapping[int, Module], pipeline: str, *, id: int, name: str,
                   layer: str, target: str, depends_on: Sequence[int] = (),
                   format: str = "parquet", partition_by: Sequence[str] | str | None = None,
                   take_over_from: int | str | None = None
                   ) -> Callable[[Callable[[ModuleContext], "DataFrame"]], Module]:
    """Check one ``@p.module(...)`` declaration against the pipeline's ``modules`` and return
    what makes the :class:`Module` of its function (which refuses a non-callable).

    Example::

        make = declare_module(p.modules, p.name, id=2010, name="Silver", layer="silver",
                              target="data/silver", depends_on=[1004])
        m = make(jobs_status)
    """
    mid = parse_module_id(id)
    if mid in modules:
        raise PipelineError(f"module id {mid} is defined twice in pipeline {pipeline!r} "
                            f"({modules[mid].name} and {name}); give each module its "
                            "own id")
    if not isinstance(name, str) or not name.strip():
        raise PipelineError(f"module {mid} needs a name")
    if not isinstance(layer, str) or not layer.strip():
        raise PipelineError(f"module {mid} needs a layer (e.g. 'bronze', 'silver', 'gold')")
    if not isinstance(target, str) or not target.strip():
        raise PipelineError(f"module {mid} needs a target path")
    fmt = str(format).lower()
    if fmt not in MODULE_FORMATS:
        raise PipelineError(f"module {mid}: unknown format {format!r}; use one of "
                            f"{', '.join(MODULE_FORMATS)}")
    deps = tuple(parse_module_id(d) for d in (depends_on or ()))
    previous = None if take_over_from is None else take_over_job(pipeline, mid, take_over_from)
    parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
    if fmt == TABLE_FORMAT:
        if "/" in target or "\\" in target or ":" in target:
            raise PipelineError(f"module {mid}: format='iceberg' writes to a table: target "
                                f"must be a table name such as catalog.db.table, not a path "
                                f"({target!r})")
        if parts:
            raise PipelineError(f"module {mid}: partition_by does not apply to an Iceberg "
                                "target; the table's own partition spec decides (ALTER "
                                "TABLE ... ADD PARTITION FIELD ...)")

    def make(fn: Callable[[ModuleContext], "DataFrame"]) -> Module:
        if not callable(fn):
            raise PipelineError(f"@module({mid}) must decorate a function of ctx")
        return Module(id=mid, name=name.strip(), layer=layer.strip(), target=target,
                      depends_on=deps, format=fmt, fn=fn, partition_by=parts,
                      take_over_from=previous)

    return make


def take_over_job(pipeline: str, mid: int, value: Any) -> str:
    """The job whose target module ``mid`` takes over: ``take_over_from`` as a module id of
    this pipeline or a job name ``"<pipeline>.<id>"``.

    Example: ``take_over_job("overwatch", 1005, 1001) == "overwatch.1001"``
    """
    text = str(value).strip() if isinstance(value, (int, str)) and \
        not isinstance(value, bool) else ""
    head, _, tail = text.rpartition(".")
    if text.lstrip("-").isdigit():
        job = job_name(pipeline, int(text))
    elif head and tail.isdigit() and "." not in head and head.strip() == head:
        job = text
    else:
        raise PipelineError(f"module {mid}: bad take_over_from {value!r}; give the module id "
                            "whose target this module takes over (e.g. 1001) or its job "
                            f"name (e.g. '{pipeline}.1001')")
    if job == job_name(pipeline, mid):
        raise PipelineError(f"module {mid}: take_over_from names the module itself")
    return job


def job_name(pipeline: str, module_id: int) -> str:
    """The job that runs module ``module_id``: ``"<pipeline>.<module_id>"``.

    Example: ``job_name("overwatch", 1004) == "overwatch.1004"``
    """
    return f"{pipeline}.{module_id}"


def graph(modules: Mapping[int, Module]) -> dict[int, tuple[int, ...]]:
    """Each module's dependencies.  Example: ``graph(p.modules) == {1004: (), 2010: (1004,)}``"""
    return {m.id: m.depends_on for m in modules.values()}


def order(pipeline: str, modules: Mapping[int, Module]) -> list[int]:
    """Module ids in dependency order (cycles and unknown dependencies are refused).

    Example: ``order(p.name, p.modules) == [1004, 2010]``
    """
    if not modules:
        raise PipelineError(f"pipeline {pipeline!r} has no modules; add some with "
                            "@pipeline.module(...)")
    return topo_order(graph(modules),
                      key=lambda m: (LAYER_RANK.get(modules[m].layer.lower(), 9), m))


def module_config(m: Module, *, pipeline: str, timezone: str, max_days_to_load: int,
                  primordial_date: Any, **extra: Any) -> dict[str, Any]:
    """The config a run of module ``m`` stores in its ledger row (``extra`` added).

    Example: ``module_config(m, pipeline="overwatch", timezone="UTC", max_days_to_load=5,
    primordial_date=None, action="RUN")["pipeline"]["target"]``
    """
    return {"pipeline": {"name": pipeline, "timezone": timezone,
                         "max_days_to_load": max_days_to_load,
                         "primordial_date": None if primordial_date is None
                         else str(primordial_date),
                         "target": m.target, "format": m.format,
                         "take_over_from": m.take_over_from,
                         "depends_on": list(m.depends_on), **extra}}


def parse_module_id(value: Any) -> int:
    """A module id from an int or its text.  Example: ``parse_module_id("2011") == 2011``"""
    if isinstance(value, bool):
        raise PipelineError(f"bad module id {value!r}: module ids are integers such as 2011")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise PipelineError(f"bad module id {value!r}: module ids are integers such as 2011")


def split_values(value: Any) -> list | None:
    """``"a,b"``, ``["a", "b,c"]`` or a single value -> a flat list (None stays None).

    Example: ``split_values(["bronze", "silver,gold"]) == ["bronze", "silver", "gold"]``
    """
    if value is None:
        return None
    items = [value] if isinstance(value, (str, int)) else list(value)
    out: list = []
    for item in items:
        if isinstance(item, str):
            out.extend(x.strip() for x in item.split(",") if x.strip())
        else:
            out.append(item)
    return out
