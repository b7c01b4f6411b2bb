"""Running one schedule from scratch (a fresh database and folders: :func:`run_schedule`) and
shrinking a failing one (:func:`shrink`: steps dropped one at a time while it still fails),
printed as a one-line ``--replay`` command (:func:`replay_command`).

    short = shrink(pg, plan, seed, job="files")   # the shortest plan that still fails
    print(replay_command(seed, short, "files"))   # python benchmarks/chaos.py --seed ... --replay
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from chaos_harness.constants import LOST_KINDS
from chaos_harness.schedule import Schedule

_db_counter = [0]


def run_schedule(pg, steps: list[dict], seed: int, log=print, job: str = "files",
                 data_pg=None, s3=None) -> Schedule:
    _db_counter[0] += 1
    with tempfile.TemporaryDirectory(prefix="sparkmark-chaos-") as d:
        sch = Schedule(pg, f"chaos_{os.getpid()}_{_db_counter[0]}", Path(d), log=log, job=job,
                       data_pg=data_pg, s3=s3,
                       proxy=any(s["kind"] in LOST_KINDS for s in steps))
        try:
            for s in steps:
                sch.step(s)
            sch.recover_and_check()
        finally:
            if sch.proxy is not None:
                sch.proxy.close()
        if job == "jdbc":
            sch.inputs.engine.dispose()
    return sch


def shrink(pg, steps: list[dict], seed: int, log=print, budget: int = 8, job: str = "files",
           data_pg=None, s3=None) -> list[dict]:
    """Greedy: drop one step at a time while the schedule still fails (at most ``budget``
    tries: every try is a whole schedule)."""
    i, tries = 0, 0
    while i < len(steps) and tries < budget and len(steps) > 1:
        trial = steps[:i] + steps[i + 1:]
        tries += 1
        log(f"  shrinking: without step {i + 1} ({steps[i]['kind']})")
        if run_schedule(pg, trial, seed, log=lambda *_: None, job=job,
                        data_pg=data_pg, s3=s3).problems:
            steps = trial
        else:
            i += 1
    return steps


def replay_command(seed: int, steps: list[dict], job: str = "files") -> str:
    return (f"python benchmarks/chaos.py --seed {seed} --jobs {job} "
            f"--replay '{json.dumps(steps, separators=(',', ':'))}'")
