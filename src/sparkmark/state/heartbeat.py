"""Lease renewal: every live run's lease is renewed by one daemon thread per process.

A run holds its job's lease (:mod:`sparkmark.state.lease`) and renews it every third of the
lease's length until the run ends, or until its ``Job`` object is gone: a :class:`Heartbeat`
holds the job only weakly, so a run nobody can finish any more lets its lease expire instead of
holding it forever.

One thread renews them all (:class:`LeaseRenewer`): a thread started per run cost ~0.1 ms
(~0.2 ms beside a busy Spark driver) of every run's ``init``, and a run of a few
tens of milliseconds never needs a renewal at all. Adding a run takes a lock and wakes the
thread only when the new run is due before the thread wakes anyway.

Example (``job``: an object with ``run_identity()``, ``store``, ``clock``, ``lease_ms``)::

    beat = Heartbeat(job)   # renewed every lease_ms / 3 from now on
    ...
    beat.stop()             # the run ended
"""
from __future__ import annotations

import math
import threading
import time
import weakref
from typing import Any

from sparkmark.core.errors import SparkmarkError


class Heartbeat:
    """One run's lease renewal, from its creation until :meth:`stop` or until ``job`` is
    garbage-collected. ``lost`` becomes ``True`` when a renewal found that the run no longer
    holds the lease.

    Example: ``beat = Heartbeat(job); ...; beat.stop()``
    """

    def __init__(self, job: Any, renewer: "LeaseRenewer | None" = None):
        self._job = weakref.ref(job)
        self._name, self._run_id, _ = job.run_identity()
        self._store = job.store
        self._clock, self._lease_ms = job.clock, job.lease_ms
        #: seconds between renewals (a third of the lease), and the next one (monotonic)
        self.interval = max(self._lease_ms / 3000.0, 0.05)
        self.due = time.monotonic() + self.interval
        self.lost = False
        self._stopped = False
        self._renewer = renewer or RENEWER
        self._renewer.add(self)

    def beat(self) -> bool:
        """Renew the lease once; ``False`` when it is to be renewed no more (stopped, the job
        is gone, or the lease was lost). A store error is transient: the next beat retries."""
        if self._stopped or self._job() is None:
            return False
        try:
            if not self._store.heartbeat(self._name, self._run_id, self._clock(),
                                         self._lease_ms):
                self.lost = True
                return False
        except SparkmarkError:
            pass  # transient; the lease may still be renewed next time
        return True

    def stop(self) -> None:
        """No more renewals (the run ended)."""
        self._stopped = True
        self._renewer.remove(self)


class LeaseRenewer:
    """The thread that calls :meth:`Heartbeat.beat` when each is due; started with the first
    heartbeat (again after a fork), idle while no run is live.

    Example: ``LeaseRenewer().add(beat)`` (``Heartbeat`` adds itself to :data:`RENEWER`)
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._beats: set[Heartbeat] = set()
        self._thread: threading.Thread | None = None
        #: when the thread wakes next (monotonic): -inf while it is renewing, inf when idle
        self._wake = math.inf

    def add(self, beat: Heartbeat) -> None:
        with self._cond:
            self._beats.add(beat)
            if self._thread is None or not self._thread.is_alive():
                self._wake = -math.inf
                self._thread = threading.Thread(target=self._loop, name="sparkmark-leases",
                                                daemon=True)
                self._thread.start()
            elif beat.due < self._wake:
                self._cond.notify()

    def remove(self, beat: Heartbeat) -> None:
        with self._cond:
            self._beats.discard(beat)

    def _loop(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [b for b in self._beats if b.due <= now]
                if not due:
                    self._wake = min((b.due for b in self._beats), default=math.inf)
                    self._cond.wait(None if self._wake == math.inf else self._wake - now)
                    continue
                self._wake = -math.inf  # renewing: a new heartbeat needs no wake-up
            for beat in due:  # outside the lock: a slow store delays no add or remove
                keep = beat.beat()
                with self._cond:
                    if keep:
                        beat.due = time.monotonic() + beat.interval
                    else:
                        self._beats.discard(beat)


#: the process's renewer
RENEWER = LeaseRenewer()
