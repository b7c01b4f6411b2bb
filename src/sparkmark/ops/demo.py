"""``sparkmark demo``: the README's main job on the embedded default — local Spark, SQLite state
and a local folder.

Part 1, file bookmarks: order files arrive in three formats (JSON, CSV, Parquet) while one
bookmarked job runs four times, ten simulated minutes apart.  Every run reads only the new
files, writes them with the exactly-once sink and prints the files and rows it processed and
the ledger.  Along the way: a file that lands late with an mtime inside the previous band (it
is still caught), a file whose mtime lies after the run's listing time (it waits for a later
run), a run with nothing new (``EMPTY``) and a file rewritten upstream (it is reprocessed).

The demo ends with a one-line verdict that checks the output against what was generated: every
file version read exactly once.  Parts are functions in :data:`PARTS` taking a
:class:`DemoContext` and returning whether their checks passed; a later part can be appended.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sparkmark.core.status import RunStatus

MIN = 60_000
JOB = "demo_orders"


SIMULATED_NOTE = ("times in this demo's ledger are simulated: its clock jumps between runs and "
                  "stands still during one, so run_start == run_end for every run")


@dataclass
class DemoClock:
    """Simulated time (epoch ms): the demo moves it forward between runs."""

    now: int

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@dataclass
class DemoContext:
    root: Path
    state: str
    console: Any
    spark: Any = None
    checks: list[tuple[str, bool]] = field(default_factory=list)

    def say(self, text: Any = "") -> None:
        if isinstance(text, str):
            self.console.print(text, markup=False, highlight=False)
        else:
            self.console.print(text)

    def check(self, text: str, ok: bool) -> bool:
        self.checks.append((text, bool(ok)))
        return bool(ok)


# ---------------------------------------------------------------------- sample data
def _orders(first_id: int, n: int, amount_shift: float = 0.0) -> list[dict[str, Any]]:
    return [{"order_id": first_id + i, "customer": f"c{(first_id + i) % 7}",
             "amount": round(10 + ((first_id + i) * 7.3) % 90 + amount_shift, 2)}
            for i in range(n)]


def _write(path: Path, fmt: str, rows: list[dict[str, Any]], mtime: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        path.write_text("order_id,customer,amount\n" + "".join(
            f"{r['order_id']},{r['customer']},{r['amount']}\n" for r in rows))
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(
            [("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64())])),
            str(path))
    os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
    return path.name


# ---------------------------------------------------------------------- part 1: file bookmarks
SOURCES = [  # (transformation_ctx, format, sub-directory, reader options)
    ("orders_json", "json", "json", {}),
    ("orders_csv", "csv", "csv", {"header": "true",
                                  "schema": "order_id BIGINT, customer STRING, amount DOUBLE"}),
    ("orders_parquet", "parquet", "parquet", {}),
]


def files_part(ctx: DemoContext) -> bool:
    from pyspark.sql import functions as F
    from rich.table import Table

    from sparkmark import Job

    inbox = ctx.root / "input" / "orders"
    out = ctx.root / "output" / "orders"
    for d in (inbox, out):
        if d.exists():
            shutil.rmtree(d)
    clock = DemoClock(now=(int(time.time() * 1000) // MIN) * MIN)
    t0 = clock.now
    _reset_job(ctx, clock)
    expected: list[tuple[int, float]] = []   # (order_id, amount) of every file version
    schedule: dict[int, list[tuple[str, str, list[dict], int, str]]] = {
        # run -> files landing before it: (format, name, rows, mtime, note)
        1: [("json", "orders-001.json", _orders(1, 5), t0 - 120 * MIN, ""),
            ("json", "orders-002.json", _orders(6, 4), t0 - 60 * MIN, ""),
            ("csv", "orders-001.csv", _orders(101, 6), t0 - 90 * MIN, ""),
            ("parquet", "orders-001.parquet", _orders(201, 8), t0 - 3 * MIN, "")],
        2: [("json", "orders-003.json", _orders(11, 3), t0 + 8 * MIN, ""),
            ("csv", "orders-002.csv", _orders(107, 2), t0 + 9 * MIN, ""),
            ("json", "orders-late.json", _orders(31, 2), t0 - 5 * MIN,
             "late: mtime inside the previous run's band"),
            ("parquet", "orders-002.parquet", _orders(209, 3), t0 + 25 * MIN,
             "mtime after this run's listing time: waits")],
        3: [],
        4: [("json", "orders-002.json", _orders(6, 4, amount_shift=0.5), t0 + 28 * MIN,
             "rewritten upstream: reprocessed")],
    }
    ctx.say(f"Part 1 — file bookmarks. Input: {inbox}  Output: {out}")
    ctx.say(f"State: {ctx.state}  (one simulated run every 10 minutes, maxBand = 15 minutes)")
    run_ids: list[str] = []
    per_run = []
    for run in sorted(schedule):
        if run > 1:
            clock.advance(10 * MIN)
        for fmt, name, rows, mtime, note in schedule[run]:
            _write(inbox / fmt / name, fmt, rows, mtime)
            if note:
                ctx.say(f"  + {fmt}/{name}: {note}")
        job = Job(ctx.spark, state=ctx.state, clock=clock)
        job.init(JOB, ["--job-bookmark-option", "job-bookmark-enable"])
        try:
            frames, lines = [], []
            for src_ctx, fmt, sub, opts in SOURCES:
                df = job.read.files(str(inbox / sub), format=fmt, transformation_ctx=src_ctx,
                                    options=dict(opts))
                df = df.select(F.col("order_id").cast("bigint"), F.col("customer"),
                               F.col("amount").cast("double"))
                names = sorted(p.rsplit("/", 1)[-1] for p in df.inputFiles())
                n_rows = df.count()
                info = job.reads.get(src_ctx, {})
                lines.append((src_ctx, fmt, names, n_rows, info.get("waiting", 0)))
                frames.append(df)
            union = frames[0]
            for df in frames[1:]:
                union = union.unionByName(df)
            written = job.write(union, str(out), format="parquet",
                                transformation_ctx="orders_sink")
            job.commit()
        except BaseException as e:
            job.fail(e)
            raise
        run_ids.append(job.run_identity()[1])
        table = Table(title=f"run {run} at T = t0 + {(clock.now - t0) // MIN} min")
        for col in ("source", "format", "files read", "rows", "waiting (mtime > T)"):
            table.add_column(col)
        for src_ctx, fmt, names, n_read, waiting in lines:
            table.add_row(src_ctx, fmt, ", ".join(names) or "-", str(n_read), str(waiting))
        ctx.say(table)
        ctx.say(f"  rows written: {written}")
        per_run.append((run, written))
    # what should be in the output: every file version once
    for files in schedule.values():
        for _fmt, _name, rows, _mtime, _note in files:
            expected.extend((r["order_id"], r["amount"]) for r in rows)
    ctx.say(_ledger_table(ctx, run_ids))

    got = sorted((int(r.order_id), float(r.amount))
                 for r in ctx.spark.read.parquet(str(out)).collect())
    statuses = [r["status"] for r in _runs(ctx, run_ids)]
    ok = True
    ok &= ctx.check("every file version was read exactly once (output == generated input)",
                    got == sorted(expected))
    ok &= ctx.check("the late file inside the band was caught in run 2",
                    any(o == 31 for o, _ in got))
    ok &= ctx.check("run 3 found nothing new and was recorded EMPTY",
                    statuses[2:3] == [RunStatus.EMPTY])
    ok &= ctx.check("the rewritten file was reprocessed in run 4",
                    per_run[3][1] == 4 + 3)
    return ok


def _reset_job(ctx: DemoContext, clock: DemoClock) -> None:
    """A fresh start for a demo run in a folder used before (the ledger keeps its history)."""
    from sparkmark.core.errors import UnknownJobError
    from sparkmark.state import open_store
    store = open_store(ctx.state)
    try:
        store.current_version(JOB)
    except UnknownJobError:
        return
    store.reset(JOB, None, now=clock())


def _runs(ctx: DemoContext, run_ids: list[str]) -> list[dict[str, Any]]:
    from sparkmark.state import open_store
    store = open_store(ctx.state)
    return [store.get_run(r) for r in run_ids]


def _ledger_table(ctx: DemoContext, run_ids: list[str]):
    from rich.table import Table
    table = Table(title=f"ledger of job {JOB}", caption=SIMULATED_NOTE)
    for col in ("run", "attempt", "status", "records written", "files read", "run_id"):
        table.add_column(col)
    for row in _runs(ctx, run_ids):
        sources = json.loads(row.get("config") or "{}").get("sources", {})
        files = sum(int(s.get("files", 0)) for s in sources.values())
        table.add_row(str(row["run_number"]), str(row["attempt"]), row["status"],
                      str(row.get("records_written")), str(files), row["run_id"][:12])
    return table


def pipeline_part(ctx: DemoContext) -> bool:
    """Part 2: a bronze -> silver -> gold pipeline, a rollback and the reload
    (see :mod:`sparkmark.ops.pipeline_demo`; its ledger is in ``<dir>/pipeline/state.db``)."""
    from sparkmark.ops.pipeline_demo import run_pipeline_demo
    ok = run_pipeline_demo(ctx.root, ctx.console, ctx.spark)
    return ctx.check("pipeline: windows, rollback and reload left every order exactly once "
                     "in bronze, silver and gold", ok)


PARTS: list[tuple[str, Callable[[DemoContext], bool]]] = [("file bookmarks", files_part),
                                                          ("pipeline", pipeline_part)]


# ---------------------------------------------------------------------- entry point
def run_demo(directory: str | None, console: Any) -> bool:
    """Run every part of the demo in ``directory`` (default ``./sparkmark-demo``).

    Returns True when every check passed; prints a one-line verdict last.
    """
    from sparkmark.engine.spark import local_session
    root = Path(directory or "sparkmark-demo").resolve()
    root.mkdir(parents=True, exist_ok=True)
    state = os.environ.get("SPARKMARK_STATE") or f"sqlite:///{root}/.sparkmark/state.db"
    (root / ".sparkmark").mkdir(exist_ok=True)
    started = time.time()
    ctx = DemoContext(root=root, state=state, console=console)
    ctx.spark = local_session("sparkmark-demo")
    results = []
    for _title, part in PARTS:
        results.append(part(ctx))
    ctx.say("")
    for text, passed in ctx.checks:
        ctx.say(f"  [{'ok' if passed else 'FAIL'}] {text}")
    ok = all(results) and all(p for _, p in ctx.checks)
    failed = sum(not p for _, p in ctx.checks)
    ctx.say(f"demo verdict: {'PASS' if ok else 'FAIL'} — {len(ctx.checks) - failed}/"
            f"{len(ctx.checks)} checks passed in {time.time() - started:.0f}s ({root})")
    return ok
