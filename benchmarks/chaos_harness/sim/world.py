"""The simulated world of one schedule: a seeded baton scheduler over driver threads, the
clock, an in-memory file system under ``sim://`` and the fault hooks on the real SQLite store.

Every I/O boundary of a simulated driver (a file-system call, a state-store statement or
COMMIT, a clock read, a part file written) calls :meth:`World.io`, which hands the baton back to
the controller; the controller (one thread, one seeded ``random.Random``) picks which driver
goes on and whether a fault strikes there.  So a schedule is a pure function of its seed.

A kill is a real kill: the driver is never given the baton again (its thread stays parked, no
``except``/``finally`` of the product runs), and the transaction it had open is rolled back
on its raw SQLite connection, as the server would when the client's connection dies.  When the
schedule ends its parked threads are reaped (every further I/O raises :class:`Reaped`).

    world = World(seed=7, workdir="/tmp/sim")
    world.run_drivers([("d1", program)])   # program(world) runs on its own thread
"""
from __future__ import annotations

import hashlib
import random
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

T0 = 1_700_000_000_000  # the simulated epoch ms at the start of every schedule
CTL = "<controller>"


class Reaped(BaseException):
    """Raised in a dead driver's thread once its schedule is over (it never runs before)."""


@dataclass
class Driver:
    """One simulated driver process: a thread, its state and its open store connections."""

    name: str
    program: Callable[["World"], Any]
    state: str = "new"          # new | yield | running | done | dead
    op: tuple[str, str] = ("start", "")
    action: Any = None          # what the controller decided at its yield point
    outcome: str = ""           # ok | the error's type and text
    conns: set = field(default_factory=set)
    helpers: list = field(default_factory=list)
    thread: threading.Thread | None = None
    noted: bool = False         # its end is in the trace
    lose_answer: bool = False   # its next COMMIT lands but its answer is lost


@dataclass
class SimFile:
    rows: tuple
    mtime: int

    @property
    def size(self) -> int:
        return sum(len(repr(r)) for r in self.rows) + 1


class World:
    """One schedule's world.  ``faults``: a function ``(world, driver, kind, detail) -> action``
    deciding at each yield point (``None``: go on, ``"kill"``, or an exception to raise)."""

    def __init__(self, seed: int, workdir: str):
        self.seed = seed
        self.rng = random.Random(seed)
        self.workdir = workdir
        self.now = T0
        self.trace: list[str] = []
        self.files: dict[str, SimFile] = {}
        self.dirs: set[str] = set()
        self.cond = threading.Condition()
        self.turn = CTL
        self.drivers: dict[str, Driver] = {}
        self.local = threading.local()
        self.closed = False
        self.faults: Callable[["World", Driver, str, str], Any] | None = None
        self.env: Callable[["World"], None] | None = None  # environment events between steps
        self.fault_counts: dict[str, int] = {}
        self.steps = 0
        self.max_steps = 20_000
        self.id_seq = 0
        #: the faults drawn, numbered in order; ``keep`` (a replay's or a shrink's) applies
        #: only those numbers, so a schedule is replayable as (seed, keep)
        self.keep: set[int] | None = None
        self.ordinal = 0
        self.drawn: list[tuple[int, int, str]] = []
        self.points: list[tuple[int, str]] = []  # (step, kind) of the yield points faults saw

    # ------------------------------------------------------------------ identity, clock
    def next_hex(self) -> str:
        """A seeded stand-in for ``uuid.uuid4().hex`` (run ids)."""
        self.id_seq += 1
        return hashlib.sha256(f"{self.seed}:{self.id_seq}".encode()).hexdigest()[:32]

    def clock(self) -> int:
        """The simulated epoch ms (a yield point: a clock read is an I/O boundary)."""
        self.io("clock", "")
        self.now += 1
        return self.now

    def allow(self, kind: str) -> bool:
        """A fault of ``kind`` was drawn here: whether it applies (``keep``), counted if so."""
        self.ordinal += 1
        if self.keep is not None and self.ordinal not in self.keep:
            return False
        self.drawn.append((self.ordinal, self.steps, kind))
        self.trace.append(f"fault #{self.ordinal}: {kind}")
        self.count(kind)
        return True

    def count(self, kind: str) -> None:
        self.fault_counts[kind] = self.fault_counts.get(kind, 0) + 1

    def note(self, text: str) -> None:
        self.trace.append(text)

    def trace_hash(self) -> str:
        return hashlib.sha256("\n".join(self.trace).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ yield points
    def current(self) -> Driver | None:
        return getattr(self.local, "driver", None)

    def io(self, kind: str, detail: str) -> None:
        """An I/O boundary: give the baton back, then do what the controller decided."""
        d = self.current()
        if d is None:  # the controller, or a helper thread of a driver: runs through
            me = threading.current_thread()
            if getattr(me, "sim_dead", False) or (self.closed and
                                                  me is not threading.main_thread()):
                raise Reaped()  # (a dead driver of an earlier schedule touches nothing here)
            return
        with self.cond:
            if self.closed:
                raise Reaped()
            d.op, d.state = (kind, detail), "yield"
            self.turn = CTL
            self.cond.notify_all()
            while self.turn != d.name and not self.closed:
                self.cond.wait()
            if self.closed:
                raise Reaped()
            action, d.action = d.action, None
            d.state = "running"
        if action == "kill":
            self._die(d)
        if isinstance(action, BaseException):
            raise action

    def _die(self, d: Driver) -> None:
        """The driver dies here: its open transaction is rolled back (the server notices the
        lost connection), then the thread parks until the schedule is over."""
        for conn in list(d.conns):
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        threading.current_thread().sim_dead = True  # type: ignore[attr-defined]
        with self.cond:
            d.state = "dead"
            self.turn = CTL
            self.cond.notify_all()
            while not self.closed:
                self.cond.wait()
        raise Reaped()

    # ------------------------------------------------------------------ the controller
    def _thread_main(self, d: Driver) -> None:
        self.local.driver = d
        try:
            self.io("start", d.name)
            d.program(self)
            d.outcome = "ok"
        except Reaped:
            return
        except Exception as e:  # noqa: BLE001 - injected faults end runs; the outcome says how
            d.outcome = f"{type(e).__name__}: {str(e)[:160]}"
        with self.cond:
            d.state = "done"
            self.turn = CTL
            self.cond.notify_all()

    def run_drivers(self, programs: list[tuple[str, Callable[["World"], Any]]]) -> list[Driver]:
        """Run ``programs`` as drivers racing under the seeded scheduler until each finished
        or died; returns them."""
        ds = []
        for name, program in programs:
            d = Driver(name, program)
            self.drivers[name] = d
            d.thread = threading.Thread(target=self._thread_main, args=(d,), daemon=True,
                                        name=f"sim-{name}")
            ds.append(d)
        for d in ds:
            with self.cond:
                assert d.thread is not None
                self.turn = d.name  # it runs up to its first yield point
                d.thread.start()
                while self.turn != CTL:
                    self.cond.wait()
        while True:
            self._join_helpers(ds)
            ready = [d for d in ds if d.state == "yield"]
            if not ready:
                return ds
            in_tx = [d for d in ready if d.conns]
            d = in_tx[0] if in_tx else (ready[0] if len(ready) == 1 else self.rng.choice(ready))
            self.steps += 1
            if self.steps > self.max_steps:
                raise RuntimeError(f"schedule {self.seed}: more than {self.max_steps} steps")
            if self.env is not None and not d.conns:
                self.env(self)
            kind, detail = d.op
            if self.faults is not None:
                self.points.append((self.steps, kind))
            action = self.faults(self, d, kind, detail) if self.faults is not None else None
            label = action if isinstance(action, str) or action is None else type(action).__name__
            self.trace.append(f"{d.name} {kind} {detail} -> {label or '.'}")
            with self.cond:
                d.action = action
                self.turn = d.name
                self.cond.notify_all()
                while self.turn != CTL:
                    self.cond.wait()
            for x in ds:
                if x.state == "done" and not x.noted:
                    x.noted = True
                    self.trace.append(f"{x.name} ended: {x.outcome.split(':')[0]}")

    def _join_helpers(self, ds: list[Driver]) -> None:
        """Threads a driver started (commit checks, stat pools) finish before the controller
        decides anything: they never wait for the baton, so this ends."""
        for d in ds:
            for t in d.helpers:
                t.join()
            d.helpers.clear()

    def close(self) -> None:
        """The schedule is over: every parked thread is reaped."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for d in self.drivers.values():
            if d.thread is not None:
                d.thread.join(timeout=5)


_START = threading.Thread.start


def tracking_start(self: threading.Thread) -> None:
    """``Thread.start`` while a simulation runs: a thread a driver starts is its helper."""
    world = getattr(tracking_start, "world", None)
    d = world.current() if world is not None else None
    if d is not None and self.name != "sparkmark-leases":  # the lease thread outlives runs
        d.helpers.append(self)
    _START(self)
