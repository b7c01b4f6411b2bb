"""One simulated schedule of one job kind, end to end: the world, the real sparkmark code over
it, the faults, the operator's moves, the recovery and the model checks.  The kinds
(:data:`KINDS`): ``files`` (a bookmarked files -> files job, :func:`files_job`) and
``pipeline`` (a two-module :class:`sparkmark.Pipeline`, :mod:`chaos_harness.sim.pipeline`).

    result = run_schedule(seed=7, workdir="/tmp/sim")                  # the kind drawn
    result = run_schedule(seed=7, workdir="/tmp/sim", job="pipeline")  # or given
    result.problems, result.trace_hash, result.faults
"""
from __future__ import annotations

import os
import random
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

import sparkmark.lifecycle.job as job_module
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
T0_SET = 1_690_000_000_000  # a bookmark set --after with no input yet: a time long before


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
    job: str = "files"


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


def later(steps: int, job: Callable[[World], None] = files_job) -> Callable[[World], None]:
    """The job, started by a second driver ``steps`` yield points after the first."""
    def program(world: World) -> None:
        for _ in range(steps):
            world.io("idle", "")
        job(world)
    return program


def operator_reset(world: World) -> None:
    """An operator's ``sparkmark bookmark reset orders [--run-id R] --remove-output``."""
    runs = [r["run_id"] for r in ledger(world) if r["status"] == "SUCCEEDED"]
    to = world.op_target(runs)
    world.note(f"operator: reset to {to[:8] if to else 'the start'} --remove-output")
    Bookmarks(SimStore(world.state_url), clock=world.clock).reset(
        JOB, run_id=to, remove_output=True, spark=world.spark)


def input_records(world: World) -> dict[int, int]:
    """Every record of the input now -> its file's mtime."""
    return {r["id"]: f.mtime for p, f in world.files.items() if p.startswith(IN + "/")
            for r in f.rows}


def target_rows(world: World, out: str) -> list[dict]:
    """The rows a reader of target ``out`` sees (``_``/``.`` names skipped, as Spark does)."""
    return [r for p, f in sorted(world.files.items()) if p.startswith(out + "/")
            and not any(part.startswith(("_", ".")) for part in p[len(out) + 1:].split("/"))
            for r in f.rows]


def operator_plain_reset(world: World) -> None:
    """An operator's ``sparkmark bookmark reset orders [--run-id R]`` (no ``--remove-output``).

    Its model: the bookmark goes back to run R (or the start) and the target keeps its rows,
    so the records read after R may legitimately be read, and written, once more.  Every
    record of the input now that is not in the target as a row of R or of a run between the
    operator's previous move and R (an earlier move set the bookmark back: the reads before
    it are not in R's bookmark) is *re-opened*: allowed one more copy
    (:func:`check_target`); so is every record of a file
    appended to in place (R's bookmark holds the file's older mtime, so the file reads as
    modified again: ``onModified=reprocess`` once more).  Nothing may go missing."""
    runs = ledger(world)
    done = [r["run_id"] for r in runs if r["status"] == "SUCCEEDED"]
    to = world.op_target(done)
    world.note(f"operator: reset to {to[:8] if to else 'the start'} (plain)")
    upto = set()
    if to is not None:
        ids = [r["run_id"] for r in runs]
        at = ids.index(to)
        since = max([m for m in world.op_marks if m <= at], default=0)
        upto = set(ids[since:at + 1])
    kept = {r["id"] for r in target_rows(world, OUT) if r.get("sm_run_id") in upto}
    for i in input_records(world):
        if i not in kept or i in world.changed:
            world.reopened[i] = world.reopened.get(i, 0) + 1
    Bookmarks(SimStore(world.state_url), clock=world.clock).reset(JOB, run_id=to)


def operator_set(world: World) -> None:
    """An operator's ``sparkmark bookmark set orders src --after T``: every file modified up
    to T counts as processed, every newer one is read again.

    Its model, with T the mtime of an input file (or a minute before the first): the records
    of the files modified up to T may be missing if no run had read them (*skippable*); the
    records of the newer files are re-opened (one more copy allowed), as after a plain
    reset.  A file appended to later has a newer mtime and is read again (``changed``)."""
    mtimes = sorted({f.mtime for p, f in world.files.items() if p.startswith(IN + "/")})
    after = world.rng.choice([mtimes[0] - 60_000] + mtimes) if mtimes else T0_SET
    world.note(f"operator: bookmark set src --after {after}")
    for i, mtime in input_records(world).items():
        if mtime <= after:
            world.skippable.add(i)
        else:
            world.reopened[i] = world.reopened.get(i, 0) + 1
    Bookmarks(SimStore(world.state_url), clock=world.clock).set(JOB, "src", after=after,
                                                                  spark=world.spark)


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
    """The ledger rows in the order they were opened (the controller reads it, no yield)."""
    with world.store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(
            "SELECT run_id, job_name, status, publish_state, records_written, "
            "pipeline_run_id, from_ts, until_ts FROM sm_runs ORDER BY rowid"))]


def check(world: World) -> list[str]:
    """The model checks of the schedule's kind (the files kind: :func:`check_files`)."""
    return KINDS[getattr(world, "job", "files")].check(world)


def check_files(world: World) -> list[str]:
    """The files kind's target and ledger (:func:`check_target`), and no committed run undone
    but by the operator."""
    runs = ledger(world)
    return check_target(world, OUT, runs) + check_committed(world, runs)


def check_target(world: World, out: str, runs: list[dict]) -> list[str]:
    """Target ``out`` and the ledger rows ``runs`` of the job writing it: every input record
    in it once; a record of a file appended to in place at least once, at most once more per
    change (``onModified=reprocess`` reads the file again); a record the operator re-opened
    (a plain reset, a bookmark set: ``world.reopened``) at most once more per re-opening; a
    vanished file's record, or one a bookmark set skipped, at most once and maybe never;
    nothing staged left; every ledger row terminal; a SUCCEEDED row published; a committed
    run's records_written equal to its rows in the target; no rows of other runs."""
    problems: list[str] = []
    rows = target_rows(world, out)
    seen = Counter(r["id"] for r in rows)
    expected = set(input_records(world))
    reopened: dict[int, int] = getattr(world, "reopened", {})
    skippable: set[int] = getattr(world, "skippable", set())
    for i in sorted(expected | world.vanished):
        n = seen.get(i, 0)
        most = 1 + world.changed.get(i, 0) + reopened.get(i, 0)
        if n > most or (n == 0 and i in expected and i not in skippable):
            problems.append(f"record {i} is in the target {n} times"
                            + (f" ({out.rsplit('/', 1)[-1]})" if out != OUT else ""))
    staging = out + "/_sparkmark_staging"
    staged = sorted(p for p in list(world.files) + sorted(world.dirs) if p.startswith(staging))
    if staged:
        problems.append(f"staged output left: {staged[:3]}")
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
    return problems


def check_committed(world: World, runs: list[dict]) -> list[str]:
    """No run whose commit was seen is now other than SUCCEEDED (the operator's undoing
    aside: those runs left ``world.committed`` when it undid them)."""
    status = {r["run_id"]: r["status"] for r in runs}
    return [f"committed run {run_id[:8]} is now {status.get(run_id)}"
            for run_id in sorted(world.committed) if status.get(run_id) != "SUCCEEDED"]


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
    # a pipeline's module runs take the default lease: the simulation's hour (its heartbeat,
    # a third of it in real seconds, never beats within a schedule; stalls outlast it)
    saved_lease = job_module.DEFAULT_LEASE_MS
    job_module.DEFAULT_LEASE_MS = LEASE_MS
    try:
        with sim_engine.patched_pyspark():
            yield
    finally:
        job_module.DEFAULT_LEASE_MS = saved_lease
        threading.Thread.start = _ORIGINAL_START  # type: ignore[method-assign]
        tracking_start.world = None  # type: ignore[attr-defined]
        uuid.uuid4 = saved_uuid  # type: ignore[assignment]
        register_scheme("sim", None)


_ORIGINAL_START = threading.Thread.start


@dataclass(frozen=True)
class JobKind:
    """What a schedule of one job kind runs and checks: ``program`` (one driver's run),
    ``operators`` (the operator's moves between episodes, by fault name), ``recovered``
    (after a clean run: it found nothing new), ``check`` (the model), ``dirs`` (the folders
    that exist at the start), ``race_delay`` (a racing second driver starts up to this many
    of its yield points after the first: about the length of one clean run)."""

    name: str
    program: Callable[[World], None]
    operators: dict[str, Callable[[World], None]]
    recovered: Callable[[World], bool]
    check: Callable[[World], list[str]]
    dirs: tuple[str, ...]
    race_delay: int = 80


def _files_recovered(world: World) -> bool:
    return ledger(world)[-1]["status"] == "EMPTY"


KINDS: dict[str, JobKind] = {
    "files": JobKind("files", files_job,
                     {"operator_reset": operator_reset,
                      "operator_plain_reset": operator_plain_reset,
                      "operator_set": operator_set},
                     _files_recovered, check_files, (IN, OUT)),
}


def draw_kind(seed: int, kinds: tuple[str, ...] | None = None) -> str:
    """The job kind of schedule ``seed`` among ``kinds`` (default all), drawn from the seed
    alone (not from the schedule's own random stream): a schedule of a kind is the same
    whichever other kinds are drawn beside it."""
    kinds = tuple(kinds or KINDS)
    return kinds[0] if len(kinds) == 1 else random.Random(f"kind:{seed}").choice(kinds)


def run_schedule(seed: int, workdir: str, opts: Options | None = None,
                 patches: Callable[[World], Any] | None = None,
                 keep_trace: bool = False, keep: Any = None, job: str | None = None) -> Result:
    """Run schedule ``seed`` of job kind ``job`` (default: drawn from the seed): episodes of
    the job (sometimes two drivers racing) under faults, sometimes an operator's move between
    two, then clean recovery runs, then the model checks."""
    opts = opts or Options()
    kind = KINDS[job or draw_kind(seed)]
    world = World(seed, workdir)
    world.job = kind.name  # type: ignore[attr-defined]
    world.keep = None if keep is None else set(keep)
    world.file_seq = world.record_seq = 0  # type: ignore[attr-defined]
    world.vanished = set()  # type: ignore[attr-defined]
    world.changed = {}  # type: ignore[attr-defined]  # record id -> changes of its file
    world.reopened = {}  # type: ignore[attr-defined]  # record id -> operator re-openings
    world.skippable = set()  # type: ignore[attr-defined]  # records a bookmark set skipped
    world.committed = set()  # type: ignore[attr-defined]
    world.op_marks = []  # type: ignore[attr-defined]  # ledger length at each operator move
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
    result = Result(seed, job=kind.name)
    with ExitStack() as stack:
        stack.enter_context(simulated(world))
        if patches is not None:
            stack.enter_context(patches(world))
        world.spark = sim_engine.SimSpark(world)  # type: ignore[attr-defined]
        world.store = SimStore(world.state_url)  # type: ignore[attr-defined]
        hook_store(world, world.store)
        world.dirs.update(kind.dirs)
        try:
            world.faults = draw_fault(opts)
            world.env = environment(opts)
            for ep in range(opts.episodes):
                add_input(world, world.rng.randint(1, 3))
                world.now += 120_000
                racers = 2 if (opts.faults_on and world.rng.random() < opts.race
                               and world.allow("racing_driver")) else 1
                world.run_drivers([(f"e{ep}d0", kind.program)] + [
                    (f"e{ep}d{i}", later(world.rng.randint(0, kind.race_delay), kind.program))
                    for i in range(1, racers)])
                world.committed.update(r["run_id"] for r in ledger(world)
                                       if r["status"] == "SUCCEEDED")
                world.now += LEASE_MS + 1  # a dead driver's lease has expired
                if opts.operator and world.rng.random() < opts.operator:
                    op = world.rng.choice(sorted(kind.operators))
                    if world.allow(op):
                        world.op_marks.append(len(ledger(world)))
                        world.run_drivers([(f"e{ep}op", kind.operators[op])])
                        world.now += LEASE_MS + 1
                        undone = {r["run_id"] for r in ledger(world)
                                  if r["status"] == "ROLLED_BACK"}
                        world.committed -= undone  # the operator undid them, on purpose
            world.faults, world.env = None, None
            for k in range(12):  # recovery: clean runs until one finds nothing new
                world.now += LEASE_MS + 1
                world.run_drivers([(f"r{k}", kind.program)])
                if k >= 1 and kind.recovered(world):
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


# the pipeline kind registers itself in KINDS when imported (it imports this module)
from chaos_harness.sim import pipeline as _pipeline  # noqa: E402,F401
