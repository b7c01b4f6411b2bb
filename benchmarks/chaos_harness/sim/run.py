"""One simulated schedule of the files -> files job, end to end: the world, the real
sparkmark code over it, the faults, the recovery and the model checks.

    result = run_schedule(seed=7, workdir="/tmp/sim")
    result.problems, result.trace_hash, result.faults
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import types
import uuid
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from sparkmark.engine.fs import register_scheme
from sparkmark.lifecycle.job import Job
from sparkmark.ops.bookmarks import Bookmarks
from sparkmark.state import StateStore

from chaos_harness.sim import engine as sim_engine
from chaos_harness.sim.simfs import SimFS
from chaos_harness.sim.world import Driver, SimFile, World, tracking_start

JOB = "orders"
IN, OUT = "sim://lake/in", "sim://lake/out"
LEASE_MS = 3_600_000     # an hour: the heartbeat thread (a third of it, in real seconds) never
#                          beats within a schedule; a dead driver's lease expires by clock jumps
STAGING = OUT + "/_sparkmark_staging"


class SimStore(StateStore):
    """The real store on SQLite, standing for a server across a connection: a COMMIT's
    answer can be lost (the simulation loses some), so the product's in-doubt path runs."""

    @property
    def answers_can_be_lost(self) -> bool:  # type: ignore[override]
        return True


class SimFSError(OSError):
    """An injected file-system error."""


@dataclass
class Result:
    seed: int
    problems: list[str] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    trace_hash: str = ""
    steps: int = 0
    trace: list[str] = field(default_factory=list)
    drawn: list[int] = field(default_factory=list)  # the ordinals of the faults applied
    points: list[tuple[int, str]] = field(default_factory=list)  # (step, kind) faults saw


@dataclass
class Options:
    """How a schedule draws its faults (``rate``: per yield point; ``forced``: the yield points
    (step numbers) to fault, with the fault, as a shrunk or swept schedule gives them)."""

    rate: float | None = None
    episodes: int = 3
    race: float = 0.3
    env_rate: float = 0.02
    forced: dict[int, str] | None = None
    faults_on: bool = True
    operator: float = 0.3
    kinds: tuple[str, ...] = ("kill", "stall", "outage", "lost_answer", "fs_error",
                              "clock_jump")


def _outage(what: str) -> OperationalError:
    return OperationalError(what, {}, sqlite3.OperationalError("sim: the state store is "
                                                               "unreachable"))


def hook_store(world: World, store: StateStore) -> None:
    """Yield points and faults on the real SQLite engine: before every statement (outage,
    kill), at every COMMIT (lost answer: the real COMMIT runs, then the answer is lost)."""
    engine = store.engine

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn, cursor, statement, params, context, executemany):  # noqa: ANN001
        words = statement.split()
        what = " ".join(words[:3]) if words else "?"
        world.io("sql", what.replace("\n", " ")[:40])

    @event.listens_for(engine, "commit")
    def _commit(conn):  # noqa: ANN001
        d = world.current()
        world.io("commit", "")
        if d is not None and getattr(d, "lose_answer", False):
            d.lose_answer = False
            conn.connection.dbapi_connection.execute("COMMIT")
            raise _outage("COMMIT")

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn, record, proxy):  # noqa: ANN001
        d = world.current()
        if d is not None:
            d.conns.add(dbapi_conn)

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_conn, record):  # noqa: ANN001
        for d in world.drivers.values():
            d.conns.discard(dbapi_conn)


def draw_fault(opts: Options) -> Callable[[World, Driver, str, str], Any]:
    """The fault policy: at each yield point, with probability ``rate``, a fault that fits it."""
    def decide(world: World, d: Driver, kind: str, detail: str) -> Any:
        if kind == "start":
            return None
        forced = opts.forced
        if forced is not None:
            f = forced.get(world.steps)
            return _apply(world, d, f, kind) if f else None
        if not opts.faults_on or opts.rate is None or world.rng.random() >= opts.rate:
            return None
        fitting = [k for k in opts.kinds if fits(k, kind)]
        return _apply(world, d, world.rng.choice(fitting), kind) if fitting else None
    return decide


def fits(fault: str, kind: str) -> bool:
    return {"kill": True, "stall": True, "outage": kind == "sql", "lost_answer": kind == "commit",
            "fs_error": kind.startswith("fs."), "clock_jump": kind == "clock"}[fault]


def _apply(world: World, d: Driver, fault: str, kind: str) -> Any:
    if not fits(fault, kind):
        return None
    if not world.allow(fault):
        return None
    if fault == "kill":
        return "kill"
    if fault == "outage":
        return _outage("statement")
    if fault == "fs_error":
        return SimFSError("sim: injected file-system error")
    if fault == "lost_answer":
        d.lose_answer = True
        return None
    if fault == "stall":  # the driver stops here for longer than its lease (a GC pause...)
        world.now += LEASE_MS + 1
        return None
    world.now += world.rng.choice([-60_000, -1_000, 1_000, 60_000])  # clock_jump
    return None


# ---------------------------------------------------------------------- the job and the input
def files_job(world: World) -> None:
    """The job under test, as a user writes it: read new files, write them, commit."""
    job = Job(world.spark, state=SimStore(world.state_url), clock=world.clock, lease_ms=LEASE_MS)
    with job.run(JOB, {"job_bookmark_option": "job-bookmark-enable"}):
        df = job.read.files(IN, format="json", transformation_ctx="src",
                            options={"mode": "FAILFAST",  # (no schemaEvolution: Spark SQL)
                                     "boundedFiles": world.bounded})
        job.write(df, OUT, format="json", transformation_ctx="sink")


def later(steps: int) -> Callable[[World], None]:
    """The job, started by a second driver ``steps`` yield points after the first."""
    def program(world: World) -> None:
        for _ in range(steps):
            world.io("idle", "")
        files_job(world)
    return program


def operator_reset(world: World) -> None:
    """An operator's ``sparkmark bookmark reset orders [--run-id R] --remove-output``."""
    runs = [r["run_id"] for r in ledger(world) if r["status"] == "SUCCEEDED"]
    to = world.op_target(runs)
    world.note(f"operator: reset to {to[:8] if to else 'the start'} --remove-output")
    Bookmarks(SimStore(world.state_url), clock=world.clock).reset(
        JOB, run_id=to, remove_output=True, spark=world.spark)


def add_input(world: World, n_files: int) -> None:
    for _ in range(n_files):
        world.file_seq += 1
        rows = []
        for _ in range(world.rng.randint(1, 4)):
            world.record_seq += 1
            rows.append({"id": world.record_seq, "v": f"r{world.record_seq}"})
        path = f"{IN}/f{world.file_seq:04d}.json"
        world.files[path] = SimFile(tuple(rows), world.now)
        world.note(f"env: new {path} ({len(rows)} rows)")


def environment(opts: Options) -> Callable[[World], None]:
    """Between two steps: a file appears, one is appended to in place (its records may then
    be read again: ``onModified=reprocess``), or one vanishes (its records may be missing)."""
    def env(world: World) -> None:
        if not opts.faults_on or opts.forced is not None or world.rng.random() >= opts.env_rate:
            return
        draw = world.rng.random()
        if draw < 0.5:
            if world.allow("file_appears"):
                add_input(world, 1)
        elif draw < 0.75:
            inputs = sorted(p for p in world.files if p.startswith(IN + "/"))
            if inputs and world.allow("file_changes"):
                p = world.rng.choice(inputs)
                world.record_seq += 1
                old = world.files[p]
                rows = old.rows + ({"id": world.record_seq, "v": f"r{world.record_seq}"},)
                world.files[p] = SimFile(rows, max(world.now, old.mtime + 1))
                for r in rows:
                    world.changed[r["id"]] = world.changed.get(r["id"], 0) + 1
                world.note(f"env: {p} appended to in place")
        else:
            inputs = sorted(p for p in world.files if p.startswith(IN + "/"))
            if inputs and world.allow("file_vanishes"):
                p = world.rng.choice(inputs)
                world.vanished.update(r["id"] for r in world.files.pop(p).rows)
                world.note(f"env: {p} vanishes")
    return env


# ---------------------------------------------------------------------- the model checks
def ledger(world: World) -> list[dict]:
    with world.store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(
            "SELECT run_id, status, publish_state, records_written FROM sm_runs "
            "ORDER BY rowid"))]


def check(world: World) -> list[str]:
    """Every record once (a record of a file appended to in place: at least once, at most once
    more per change, as ``onModified=reprocess`` reads the file again); nothing staged left;
    every ledger row terminal; records_written equals the target; no committed run undone."""
    problems: list[str] = []
    rows = [r for p, f in sorted(world.files.items()) if p.startswith(OUT + "/")
            and not any(part.startswith(("_", ".")) for part in p[len(OUT) + 1:].split("/"))
            for r in f.rows]
    seen = Counter(r["id"] for r in rows)
    expected = {r["id"] for p, f in world.files.items() if p.startswith(IN + "/") for r in f.rows}
    for i in sorted(expected | world.vanished):
        n = seen.get(i, 0)
        if n > 1 + world.changed.get(i, 0) or (n == 0 and i in expected):
            problems.append(f"record {i} is in the target {n} times")
    staged = sorted(p for p in list(world.files) + sorted(world.dirs) if p.startswith(STAGING))
    if staged:
        problems.append(f"staged output left: {staged[:3]}")
    runs = ledger(world)
    by_run = Counter(r.get("sm_run_id") for r in rows)
    for r in runs:
        if r["status"] == "RUNNING":
            problems.append(f"run {r['run_id'][:8]} is still RUNNING")
        if r["status"] == "SUCCEEDED" and r["publish_state"] not in (None, "done"):
            problems.append(f"run {r['run_id'][:8]} SUCCEEDED but publish_state="
                            f"{r['publish_state']}")
        written = by_run.pop(r["run_id"], 0)
        if r["status"] in ("SUCCEEDED", "EMPTY") and written != (r["records_written"] or 0):
            problems.append(f"run {r['run_id'][:8]} records_written={r['records_written']} "
                            f"but the target has {written} of its rows")
        if r["status"] not in ("SUCCEEDED", "EMPTY") and written:
            problems.append(f"run {r['run_id'][:8]} ({r['status']}) has {written} rows in "
                            "the target")
    if by_run:
        problems.append(f"target rows of no ledger run: {dict(by_run)}")
    status = {r["run_id"]: r["status"] for r in runs}
    for run_id in sorted(world.committed):
        if status.get(run_id) != "SUCCEEDED":
            problems.append(f"committed run {run_id[:8]} is now {status.get(run_id)}")
    return problems


# ---------------------------------------------------------------------- a schedule
@contextmanager
def simulated(world: World) -> Iterator[None]:
    """The process-wide seams pointed at ``world`` for the schedule: the ``sim`` scheme, the
    engine's PySpark helpers, run ids, and helper threads counted to their driver."""
    saved_uuid = uuid.uuid4
    register_scheme("sim", lambda path: SimFS(world, path))
    uuid.uuid4 = lambda: types.SimpleNamespace(hex=world.next_hex())  # type: ignore[assignment]
    tracking_start.world = world  # type: ignore[attr-defined]
    threading.Thread.start = tracking_start  # type: ignore[method-assign]
    try:
        with sim_engine.patched_pyspark():
            yield
    finally:
        threading.Thread.start = _ORIGINAL_START  # type: ignore[method-assign]
        tracking_start.world = None  # type: ignore[attr-defined]
        uuid.uuid4 = saved_uuid  # type: ignore[assignment]
        register_scheme("sim", None)


_ORIGINAL_START = threading.Thread.start


def run_schedule(seed: int, workdir: str, opts: Options | None = None,
                 patches: Callable[[World], Any] | None = None,
                 keep_trace: bool = False, keep: Any = None) -> Result:
    """Run schedule ``seed``: episodes of the job (sometimes two drivers racing) under faults,
    then clean recovery runs, then the model checks."""
    opts = opts or Options()
    world = World(seed, workdir)
    world.keep = None if keep is None else set(keep)
    world.file_seq = world.record_seq = 0  # type: ignore[attr-defined]
    world.vanished = set()  # type: ignore[attr-defined]
    world.changed = {}  # type: ignore[attr-defined]  # record id -> changes of its file
    world.committed = set()  # type: ignore[attr-defined]
    world.rolled_back = set()  # type: ignore[attr-defined]
    world.bounded = world.rng.choice([2, 3, 1000])  # type: ignore[attr-defined]
    world.op_target = lambda runs: (  # type: ignore[attr-defined]
        world.rng.choice([None] + runs) if runs else None)
    if opts.rate is None:
        opts = Options(**{**opts.__dict__, "rate": world.rng.choice([0.005, 0.01, 0.03])})
    os.makedirs(workdir, exist_ok=True)
    db = os.path.join(workdir, f"state-{seed}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    world.state_url = f"sqlite:///{db}"  # type: ignore[attr-defined]
    result = Result(seed)
    with ExitStack() as stack:
        stack.enter_context(simulated(world))
        if patches is not None:
            stack.enter_context(patches(world))
        world.spark = sim_engine.SimSpark(world)  # type: ignore[attr-defined]
        world.store = SimStore(world.state_url)  # type: ignore[attr-defined]
        hook_store(world, world.store)
        world.dirs.update({"sim://lake/in", "sim://lake/out"})
        try:
            world.faults = draw_fault(opts)
            world.env = environment(opts)
            for ep in range(opts.episodes):
                add_input(world, world.rng.randint(1, 3))
                world.now += 120_000
                racers = 2 if (opts.faults_on and world.rng.random() < opts.race
                               and world.allow("racing_driver")) else 1
                world.run_drivers([(f"e{ep}d0", files_job)] + [
                    (f"e{ep}d{i}", later(world.rng.randint(0, 80))) for i in range(1, racers)])
                world.committed.update(r["run_id"] for r in ledger(world)
                                       if r["status"] == "SUCCEEDED")
                world.now += LEASE_MS + 1  # a dead driver's lease has expired
                if opts.operator and world.rng.random() < opts.operator and \
                        world.allow("operator_reset"):
                    world.run_drivers([(f"e{ep}op", operator_reset)])
                    world.now += LEASE_MS + 1
                    undone = {r["run_id"] for r in ledger(world)
                              if r["status"] == "ROLLED_BACK"}
                    world.committed -= undone  # the operator undid them, on purpose
            world.faults, world.env = None, None
            for k in range(12):  # recovery: clean runs until one finds nothing new
                world.now += LEASE_MS + 1
                world.run_drivers([(f"r{k}", files_job)])
                last = ledger(world)[-1]
                if last["status"] == "EMPTY" and k >= 1:
                    break
            result.problems = check(world)
        finally:
            world.close()
            world.store.engine.dispose()
    result.faults = dict(world.fault_counts)
    result.trace_hash = world.trace_hash()
    result.steps = world.steps
    result.drawn = [o for o, _, _ in world.drawn]
    result.points = list(world.points)
    if keep_trace:
        result.trace = list(world.trace)
    shutil.rmtree(workdir, ignore_errors=True)
    return result
