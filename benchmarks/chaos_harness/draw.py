"""Schedule drawing: a schedule's steps drawn from its seed (every random choice in the step,
so a schedule replays from its JSON), its job kind, and the new input that arrives before each
step (files, objects in a bucket, or rows in the PostgreSQL source table; unique record ids).

    import random
    from chaos_harness.draw import draw_schedule, draw_step
    plan = draw_schedule(7, 4, "files")           # the same four steps for seed 7, always
    kill = draw_step(random.Random(1), "kill")    # {"kind": "kill", "phase": ..., "delay": ...}
"""
from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path

from chaos_harness.constants import (ALL_KINDS, KINDS, PIPELINE_MODULES, RESET_MAX_DELAY,
                                     SOURCE_TABLE)
from crash import ICEBERG_PHASES, PHASES, S3_PHASES  # crash.py: the phase markers


def draw_step(rng: random.Random, kind: str | None = None, job: str = "files") -> dict:
    """One step with all its random choices, so that a schedule replays from its JSON.
    The iceberg job's ``commit`` phase is wider (its publish is a cherry-pick in Spark SQL);
    every job draws the same kinds and phases from the same rng."""
    kind = kind or rng.choice(ALL_KINDS if job == "s3files" else KINDS)
    phases = (ICEBERG_PHASES if job == "iceberg" else S3_PHASES if job == "s3files"
              else PHASES)
    step: dict = {"kind": kind, "seed": rng.randrange(1 << 30)}
    if kind == "kill":
        step["phase"] = rng.choice(list(phases))
        step["delay"] = round(rng.uniform(0, phases[step["phase"]][1]), 3)
    elif kind in ("store_down", "s3_down"):
        step["phase"] = rng.choice(list(phases))
        step["delay"] = round(rng.uniform(0, phases[step["phase"]][1]), 3)
        step["down_s"] = round(rng.uniform(0.2, 3.0), 2)
    elif kind == "lost_answer":
        step["down_s"] = rng.choice([0.0, round(rng.uniform(0.5, 3.0), 2)])
    elif kind == "clock":
        step["offset_min"] = rng.choice([-1, 1]) * rng.randint(1, 30)
        if job == "pipeline":
            # seconds: a pipeline's windows end at its (jumped) snapshot, so a forward jump
            # stalls the modules (NO_PROGRESS) until real time passes it; the recovery waits
            step["offset_s"] = step.pop("offset_min")
    if job == "pipeline" and kind in ("kill", "store_down"):
        step["module"] = rng.choice(sorted(PIPELINE_MODULES.values()))  # which module's phase
    elif kind == "input":
        step["bursts"] = [round(rng.uniform(0, 3.0), 2) for _ in range(rng.randint(1, 3))]
    elif kind == "reset_kill":
        # "start": a random moment from the CLI's start (mostly before its store transaction);
        # "removal": right after the transaction recorded the intent (runs 'removing'), while
        # the output is being deleted
        step["phase"] = rng.choice(["start", "removal"])
        step["delay"] = round(rng.uniform(0, RESET_MAX_DELAY) if step["phase"] == "start"
                              else rng.uniform(0, 0.3), 3)
    return step


def draw_schedule(seed: int, steps: int, job: str = "files") -> list[dict]:
    rng = random.Random(seed)
    return [draw_step(rng, job=job) for _ in range(steps)]


def draw_job(seed: int, jobs: tuple[str, ...] | list[str]) -> str:
    """The job kind of schedule ``seed`` (its own rng: the steps drawn do not change)."""
    return random.Random(f"job-{seed}").choice(list(jobs))


class Inputs:
    """New input files with unique record ids (thread-safe; temporary files are hidden)."""

    def __init__(self, folder: Path | None):
        self.folder, self.files, self.expected = folder, 0, []
        self.lock = threading.Lock()

    def add(self, rng: random.Random, most: int = 3) -> int:
        n = rng.randint(0, most)
        for _ in range(n):
            with self.lock:
                self.files += 1
                rel = f"part={self.files % 3}/orders-{self.files:05d}.json"
                recs = []
                for _ in range(rng.randint(1, 20)):
                    rid = f"r{len(self.expected):06d}"
                    self.expected.append(rid)
                    recs.append(json.dumps({"id": rid, "v": len(self.expected)}))
            self.store(rel, "\n".join(recs) + "\n")
        return n

    def store(self, rel: str, text: str) -> None:
        """Write one input file under a hidden name, then rename it into place."""
        assert self.folder is not None
        name = self.folder / rel
        name.parent.mkdir(parents=True, exist_ok=True)
        tmp = name.parent / f".{name.name}.tmp"  # hidden: a listing never sees it
        tmp.write_text(text)
        os.replace(tmp, name)


class S3Inputs(Inputs):
    """New input objects PUT into the schedule's bucket under ``input/`` (one PUT each: an
    object is visible whole or not at all, so no temporary name is needed)."""

    def __init__(self, bucket):
        super().__init__(None)
        self.bucket = bucket

    def store(self, rel: str, text: str) -> None:
        self.bucket.put(f"input/{rel}", text)


class SourceTable:
    """New rows in the PostgreSQL source table, with a monotonically increasing key ``k`` and
    unique record ids; each batch (the files' counterpart) is one committed transaction, and
    batches commit in key order (one lock), so a key bookmark never skips a row."""

    def __init__(self, sa_url: str):
        import sqlalchemy as sa
        self.engine = sa.create_engine(sa_url)
        self.files, self.expected = 0, []
        self.lock = threading.Lock()
        with self.engine.begin() as c:
            c.execute(sa.text(f"CREATE TABLE {SOURCE_TABLE} (k BIGINT PRIMARY KEY, "
                              "id TEXT NOT NULL, v BIGINT NOT NULL)"))

    def add(self, rng: random.Random, most: int = 3) -> int:
        import sqlalchemy as sa
        n = rng.randint(0, most)
        for _ in range(n):
            with self.lock:
                self.files += 1
                rows = []
                for _ in range(rng.randint(1, 20)):
                    rid = f"r{len(self.expected):06d}"
                    self.expected.append(rid)
                    rows.append({"k": len(self.expected), "id": rid, "v": len(self.expected)})
                with self.engine.begin() as c:
                    c.execute(sa.text(f"INSERT INTO {SOURCE_TABLE} (k, id, v) "
                                      "VALUES (:k, :id, :v)"), rows)
        return n
