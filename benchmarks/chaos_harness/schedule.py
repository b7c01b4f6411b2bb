"""One schedule driven against its job: :class:`Schedule` starts the workers
(``benchmarks/chaos.py --worker``) in child processes, injects each step's fault (a kill, a
store or S3 outage, racing drivers, a clock jump, late input, a lost commit answer, a killed
reset or rollback), then runs the recovery and checks the outcome against the model.

    from chaos_harness.draw import draw_schedule
    sch = Schedule(pg, "chaos_1", Path(tmp), job="files")  # pg: a devtools.postgres server
    for step in draw_schedule(7, 4):
        sch.step(step)
    problems = sch.recover_and_check()  # [] when every record is in the target exactly once
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from chaos_harness.checks import iceberg_problems, pipeline_problems, rollback_set
from chaos_harness.constants import (CHAOS_SCRIPT, JOB, PIPELINE, PIPELINE_MODULES,
                                     PIPELINE_PRIMORDIAL, ROOT, STAGE_TABLE, TARGET_TABLE,
                                     TERMINAL, WORKER_TIMEOUT)
from chaos_harness.draw import Inputs, S3Inputs, SourceTable
from chaos_harness.environment import write_s3_spark_defaults, write_spark_defaults
from chaos_harness.readers import (bookmark_of, ledger_rows, pipeline_ledger_rows,
                                   read_id_runs, read_ids, read_s3_ids, s3_staged_keys,
                                   table_ids)
from chaos_harness.workers import write_pipeline_file
from crash import PHASES, Trial  # crash.py: the phase markers and the child process


class Schedule:
    """Runs one schedule's steps against a fresh database and folders (and, for the JDBC job,
    a fresh database on the data server: the state store's outages do not touch it)."""

    def __init__(self, pg, db: str, workdir: Path, log=print, job: str = "files",
                 data_pg=None, s3=None, proxy: bool = False):
        self.pg, self.log, self.job, self.s3 = pg, log, job, s3
        self.state = pg.create_database(db)
        # the workers reach the store through a CutProxy when a step loses answers (the
        # checks and the CLI go straight to it)
        self.proxy = None
        worker_state = self.state
        if proxy:
            from sparkmark.devtools.netfault import CutProxy
            self.proxy = CutProxy("127.0.0.1", pg.port)
            worker_state = self.state.replace(f":{pg.port}/", f":{self.proxy.port}/")
        self.input, self.target = workdir / "input", workdir / "target"
        self.input.mkdir(parents=True)
        self.workdir = workdir
        self.data_sa = self.data_jdbc = None
        self.bucket = None
        if job == "s3files":  # a fresh bucket per schedule on the run's one SeaweedFS server
            from sparkmark.devtools.s3 import Bucket
            self.bucket = Bucket(s3, db.replace("_", "-"))
            self.inputs = S3Inputs(self.bucket)
        elif job == "jdbc":
            self.data_sa = data_pg.create_database(db + "_data")
            self.data_jdbc = f"jdbc:postgresql://127.0.0.1:{data_pg.port}/{db}_data"
            self.inputs: Inputs | SourceTable = SourceTable(self.data_sa)
        else:
            self.inputs = Inputs(self.input)
        self.pipeline_file = workdir / "pipeline.py"
        if job == "pipeline":  # what ``sparkmark rollback`` loads
            write_pipeline_file(self.pipeline_file, self.state, self.input, self.target)
        self.clock_until = 0.0                 # pipeline: real time a forward jump stalls until
        self.pipeline_bookmark: dict = {}      # pipeline: module A's bookmark after recovery
        src, dst = ((self.bucket.url("input"), self.bucket.url("target")) if self.bucket
                    else (str(self.input), str(self.target)))
        self.base = [sys.executable, str(CHAOS_SCRIPT), "--state", worker_state, "--input", src,
                     "--target", dst, "--job", job] + (
                         ["--data-jdbc", self.data_jdbc] if self.data_jdbc else [])
        self.reset_seen = 0                    # committed runs a reset may have rolled back
        self.reset_states: Counter = Counter()  # what each reset_kill left
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SPARKMARK_LEASE_SECONDS="30")
        self.env.pop("SPARKMARK_CHAOS_CLOCK_MS", None)
        if job == "iceberg":
            # the catalog (a fresh warehouse folder) and the jars in spark-defaults.conf: the
            # workers, the checker and the CLI's reset all find the table the way a user's would
            write_spark_defaults(workdir / "spark-conf", workdir / "warehouse")
            self.env["SPARK_CONF_DIR"] = str(workdir / "spark-conf")
            # spark-submit arguments in the harness's environment (importing sparkmark.glue
            # sets some for bare SparkContext() scripts) would replace those jars: drop them
            self.env.pop("PYSPARK_SUBMIT_ARGS", None)
        if job == "s3files":  # the s3a jars and settings, as a user passes them
            write_s3_spark_defaults(workdir / "spark-conf", s3)
            self.env["SPARK_CONF_DIR"] = str(workdir / "spark-conf")
            self.env.pop("PYSPARK_SUBMIT_ARGS", None)
        self.statuses: Counter = Counter()     # the ledger's statuses after recovery
        self.iceberg_unpublished = 0           # unpublished snapshots of uncommitted runs
        self.outcomes: Counter = Counter()     # (kind, outcome) -> count
        self.committed: list[str] = []         # run ids whose commit() returned
        self.problems: list[str] = []
        self.errors: list[str] = []

    # -- workers
    def start(self, extra_env: dict | None = None, gate: str | None = None) -> Trial:
        cmd = self.base + ["--worker"] + (["--gate", gate] if gate else [])
        return Trial(cmd, dict(self.env, **(extra_env or {})))

    def finish(self, t: Trial, kind: str) -> str:
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
            self.problems.append(f"{kind}: a worker hung for {WORKER_TIMEOUT:.0f} s; last "
                                 f"lines {t.lines[-3:]}")
            return "hung"
        time.sleep(0.05)
        for line in t.lines:
            if line.startswith("RUN ") and "done" in t.seen and self.job != "pipeline":
                self.committed.append(line[4:])
            elif line.startswith("COMMITTED "):  # a pipeline's module run that committed
                self.committed.append(line[10:])
        if "done" in t.seen:
            return "completed"
        if any(x.startswith("REFUSED") for x in t.seen):
            return "refused"
        err = next((x for x in t.lines if x.startswith("ERROR ")), None)
        if err:
            self.errors.append(f"{kind}: {err[6:]}")
            return "failed"
        return "killed" if t.proc.returncode in (-9, 137) else "failed"

    def s3_down(self, s: dict) -> str:
        """Stop SeaweedFS ``delay`` s after the step's phase marker, start it again after
        ``down_s`` s.  The model: the run completes, or it fails cleanly (FAILED, the bookmark
        version and the target's records as before), or it failed after its store commit
        (SUCCEEDED, publish not done: recovery rolls the publish forward); never a FAILED run
        with records published or the bookmark moved."""
        before_bm = bookmark_of(self.state)
        before_ids = Counter(read_target_ids(self))
        t, outcome = self.outage(s, self.s3.stop_server, self.s3.start, "s3_down")
        run = next((x[4:] for x in t.lines if x.startswith("RUN ")), None)
        row = next((r for r in self.ledger() if r["run_id"] == run), None)
        if outcome != "failed" or row is None:
            return outcome
        after_ids = Counter(read_target_ids(self))
        if row["status"] == "FAILED":
            if bookmark_of(self.state) != before_bm or after_ids != before_ids:
                self.problems.append(
                    f"s3_down: run {run} FAILED but the bookmark moved "
                    f"({before_bm and before_bm['Version']} -> "
                    f"{(bookmark_of(self.state) or {}).get('Version')}) or the target changed "
                    f"({sum(before_ids.values())} -> {sum(after_ids.values())} records)")
            return "failed"
        if row["status"] in ("SUCCEEDED", "EMPTY"):
            if row["publish_state"] not in (None, "done", "pending"):
                self.problems.append(f"s3_down: run {run} {row['status']} with publish_state "
                                     f"{row['publish_state']!r}")
            return "failed-after-commit"
        self.problems.append(f"s3_down: run {run} ended {row['status']} (expected FAILED, or "
                             "SUCCEEDED/EMPTY after its commit)")
        return "failed"

    def lost_answer(self, s: dict) -> str:
        """The run's commit reaches the store, its answer does not (then ``down_s`` s of
        outage through the proxy).  The model: the run completes (it read the outcome again)
        or fails saying the outcome is unknown; either way its row is SUCCEEDED (the commit
        landed) and its output is published by the run or by the next one (checked with the
        rest after recovery); a run that never got to commit is ``missed``."""
        if self.proxy is None or self.job == "pipeline":
            raise ValueError("lost_answer needs the schedule's proxy and a single job")
        cuts = self.proxy.cuts
        self.proxy.cut_after(b"COMMIT", s["down_s"],
                             following=b"INSERT INTO sm_bookmark_versions")
        t = self.start()
        outcome = self.finish(t, "lost_answer")
        self.proxy.disarm()
        self.proxy.wait_accepting()  # the outage ends with the step, as store_down's does
        if self.proxy.cuts == cuts:
            return "missed"
        run = next((x[4:] for x in t.lines if x.startswith("RUN ")), None)
        row = next((r for r in self.ledger() if r["run_id"] == run), None)
        if row is None or row["status"] not in ("SUCCEEDED", "EMPTY"):
            self.problems.append(f"lost_answer: run {run}'s commit landed but its row is "
                                 f"{row and row['status']}")
        if outcome == "completed" and row is not None and row["publish_state"] not in (
                None, "done"):
            self.problems.append(f"lost_answer: run {run} completed but its publish is "
                                 f"{row['publish_state']!r}")
        return outcome

    def outage(self, s: dict, stop, start, kind: str) -> tuple[Trial, str]:
        """Run the job, stop a server ``delay`` s after the step's phase marker, start it again
        after ``down_s`` s; the worker and its outcome."""
        t = self.start()
        if t.wait_for(self.marker(s)):
            time.sleep(s["delay"])
        stop()
        time.sleep(s["down_s"])
        start()
        return t, self.finish(t, kind)

    def marker(self, s: dict, phase: str | None = None) -> str:
        """The worker's line that opens ``phase`` (a pipeline's: of the step's module)."""
        m = PHASES[phase or s["phase"]][0]
        return f"{s.get('module', 'A')}:{m}" if self.job == "pipeline" else m

    def step(self, s: dict) -> None:
        rng = random.Random(s["seed"])
        self.inputs.add(rng)
        kind = s["kind"]
        if kind == "run":
            outcome = self.finish(self.start(), kind)
        elif kind == "kill":
            t = self.start()
            if t.wait_for(self.marker(s)):
                time.sleep(s["delay"])
            t.kill()
            outcome = self.finish(t, kind)
        elif kind == "store_down":
            _, outcome = self.outage(s, self.pg.stop_server, self.pg.start_server, kind)
        elif kind == "racing":
            gate = str(self.workdir / f"gate-{s['seed']}")
            ts = [self.start(gate=gate) for _ in range(2)]
            for t in ts:
                t.wait_for("ready")
            Path(gate).touch()
            outs = sorted(self.finish(t, kind) for t in ts)
            ran = sum(any(x.startswith("RUN ") for x in t.seen) for t in ts)
            if self.job == "pipeline":
                # each module is its own job: the loser is refused by p.run() (a module is
                # active) or at a module's init (then its dependants are SKIPPED); it may not
                # fail in any other way
                if "refused" not in outs or any(o not in ("completed", "refused")
                                                for o in outs):
                    self.problems.append(f"racing pipeline drivers: outcomes {outs}; expected "
                                         "one refused (at the run or at a module), neither "
                                         "failed")
            elif ran != 1 or "refused" not in outs:
                self.problems.append(f"racing: {ran} of 2 drivers ran (outcomes {outs}); "
                                     f"expected exactly one, the other refused (a driver "
                                     f"that fails otherwise is a wrong answer too)")
            outcome = "+".join(outs)
        elif kind == "clock":
            if "offset_s" in s:  # the pipeline: seconds (see draw_step)
                env = {"SPARKMARK_CHAOS_CLOCK_MS": str(s["offset_s"] * 1000)}
                self.clock_until = max(self.clock_until, time.time() + s["offset_s"] + 1)
            else:
                env = {"SPARKMARK_CHAOS_CLOCK_MS": str(s["offset_min"] * 60_000)}
            outcome = self.finish(self.start(env), kind)
        elif kind == "s3_down":
            outcome = self.s3_down(s)
        elif kind == "input":
            t = self.start()

            def arrive() -> None:
                t.wait_for(self.marker(s, "read"))
                for delay in s["bursts"]:
                    time.sleep(delay)
                    self.inputs.add(rng, most=2)

            th = threading.Thread(target=arrive)
            th.start()
            outcome = self.finish(t, kind)
            th.join()
        elif kind == "lost_answer":
            outcome = self.lost_answer(s)
        elif kind == "reset_kill" and self.job == "pipeline":
            outcome = self.rollback_kill(s)
        elif kind == "reset_kill":
            outcome = self.reset_kill(s)
        else:
            raise ValueError(f"unknown step kind {kind!r}")
        self.outcomes[(kind, outcome)] += 1
        self.log(f"    {kind:<10} -> {outcome}")

    def reset_kill(self, s: dict) -> str:
        """``sparkmark bookmark reset JOB --remove-output`` (the CLI, its own process group),
        SIGKILLed after ``delay`` seconds unless it ended first.  The model:

        * completed: the bookmark is empty (a new ``reset`` version), every run that was
          SUCCEEDED/EMPTY is ROLLED_BACK with its output removed (``publish_state`` removed) and
          the target holds no record;
        * killed or failed: the state is one of the two sides of the reset's one store
          transaction: either nothing changed (same bookmark version, the same runs
          SUCCEEDED/EMPTY) or the bookmark is reset and all those runs are ROLLED_BACK (output
          removed or still ``removing``: a repeat or the job's next run finishes it);
        * either way, after recovery every source record is in the target exactly once (the
          records of the rolled-back runs are read again: reset = start over).
        """
        before_rows = {r["run_id"]: r for r in self.ledger()}
        before_bm = bookmark_of(self.state)
        self.reset_seen = len(self.committed)  # these may be ROLLED_BACK from now on
        # through sh: the CLI's error line (stderr) reaches the harness with its stdout
        cmd = ["sh", "-c", 'exec "$0" "$@" 2>&1', sys.executable, "-c",
               "from sparkmark.ops.cli import main; main()", "--state", self.state, "bookmark",
               "reset", JOB, "--remove-output"]
        outcome = self.killed_cli(cmd, s, "reset", "")
        if outcome == "hung":
            return outcome
        done = {r: x for r, x in before_rows.items() if x["status"] in ("SUCCEEDED", "EMPTY")}
        after_rows = {r["run_id"]: r for r in self.ledger()}
        after_bm = bookmark_of(self.state)
        # what the kill left: the reset not begun, or begun with its removal open or finished
        publish = {after_rows[r]["publish_state"] for r in done}
        statuses = {after_rows[r]["status"] for r in done}
        rolled = bool(done) and statuses == {"ROLLED_BACK"}
        self.reset_states[outcome + ": " + (
            "nothing to roll back" if not done else
            "reset, removal finished" if rolled and publish == {"removed"} else
            "reset, removal open" if rolled else
            "unchanged" if after_bm == before_bm and all(
                after_rows[r]["status"] == x["status"] for r, x in done.items()) else
            "half a reset")] += 1
        if before_bm is None:  # no job yet: the reset must refuse and change nothing
            if outcome == "completed" or after_rows != before_rows:
                self.problems.append(f"reset_kill before any run: {outcome}, ledger "
                                     f"{len(before_rows)} -> {len(after_rows)} rows")
            return "no-job" if outcome == "failed" else outcome
        changed_bm = after_bm != before_bm
        if outcome == "completed":
            left = len(read_target_ids(self))
            bad = [(r, after_rows[r]["status"], after_rows[r]["publish_state"]) for r in done
                   if (after_rows[r]["status"], after_rows[r]["publish_state"])
                   != ("ROLLED_BACK", "removed")]
            if after_bm["JobBookmark"] or not changed_bm or bad or left:
                self.problems.append(
                    f"reset_kill completed but: bookmark {after_bm['JobBookmark']!r} "
                    f"(changed: {changed_bm}), runs not rolled back/removed {bad[:3]}, "
                    f"{left} records left in the target")
        elif done and not rolled and any(after_rows[r]["status"] != x["status"]
                                         for r, x in done.items()):
            self.problems.append(f"reset_kill {outcome}: half a reset, run statuses "
                                 f"{sorted(statuses)} (before: all SUCCEEDED/EMPTY)")
        elif rolled and (after_bm["JobBookmark"] or not changed_bm):
            self.problems.append(f"reset_kill {outcome}: runs ROLLED_BACK but the bookmark is "
                                 f"{after_bm['JobBookmark']!r} (changed: {changed_bm})")
        elif done and not rolled and changed_bm:
            self.problems.append(f"reset_kill {outcome}: the bookmark changed "
                                 f"({before_bm['Version']} -> {after_bm['Version']}) but no "
                                 "run was rolled back")
        return outcome

    def rollback_kill(self, s: dict) -> str:
        """The pipeline's reset: ``sparkmark rollback FILE --module ... --since 2000-01-01``
        (the CLI; the modules that made progress, downstream ones included: rolling back A
        alone would let B load A's reloaded rows twice), SIGKILLed after ``delay`` seconds
        unless it ended first.  The model, as for :meth:`reset_kill`: the rollback is one store
        transaction (every run from the primordial cut ROLLED_BACK and the modules' bookmarks
        rewound) then the removal of those runs' files; so after a kill either nothing changed
        or all of those runs are ROLLED_BACK (removal open or finished); completed: all of them
        ROLLED_BACK and removed, the modules' targets empty and A's bookmark empty."""
        from sparkmark.planning.windows import parse_time
        primordial = parse_time(PIPELINE_PRIMORDIAL, "UTC", what="primordial")
        before = pipeline_ledger_rows(self.state)
        cut = rollback_set(before, primordial)
        modules = sorted({r["module_id"] for r in before if r["run_id"] in cut})
        self.reset_seen = len(self.committed)  # these may be ROLLED_BACK from now on
        cmd = ["sh", "-c", 'exec "$0" "$@" 2>&1', sys.executable, "-c",
               "from sparkmark.ops.cli import main; main()", "--state", self.state, "rollback",
               str(self.pipeline_file), "--since", PIPELINE_PRIMORDIAL]
        for m in modules or sorted(PIPELINE_MODULES):
            cmd += ["--module", str(m)]
        outcome = self.killed_cli(cmd, s, "rollback",
                                  f" (pipeline rollback of modules {modules})")
        if outcome == "hung":
            return outcome
        after = {r["run_id"]: r for r in pipeline_ledger_rows(self.state)}
        statuses = {after[r]["status"] for r in cut}
        publish = {after[r]["publish_state"] for r in cut}
        rolled = bool(cut) and statuses == {"ROLLED_BACK"}
        unchanged = all(after[r]["status"] == "SUCCEEDED" or after[r]["status"] == "EMPTY"
                        for r in cut)
        self.reset_states[outcome + ": " + (
            "nothing to roll back" if not cut else
            "reset, removal finished" if rolled and "removing" not in publish else
            "reset, removal open" if rolled else
            "unchanged" if unchanged else "half a reset")] += 1
        if not cut:  # nothing committed: the CLI must refuse and change nothing
            if outcome == "completed" or any(
                    after.get(r["run_id"], {}).get("status") != r["status"] for r in before):
                self.problems.append(f"pipeline rollback with nothing to roll back: {outcome}")
            return "no-job" if outcome == "failed" else outcome
        if not rolled and not unchanged:
            self.problems.append(f"reset_kill {outcome}: half a rollback, run statuses "
                                 f"{sorted(statuses)} (before: all SUCCEEDED/EMPTY)")
        if outcome == "completed":
            left = {m: len(read_id_runs(self.target / PIPELINE_MODULES[m])) for m in modules}
            bm = bookmark_of(self.state, f"{PIPELINE}.1")
            if not rolled or "removing" in publish or any(left.values()) or (
                    1 in modules and bm and bm["JobBookmark"]):
                self.problems.append(
                    f"pipeline rollback completed but: statuses {sorted(statuses)}, publish "
                    f"{sorted(map(str, publish))}, rows left per module {left}, A's bookmark "
                    f"{bm and bm['JobBookmark']!r}")
        return outcome

    def killed_cli(self, cmd: list[str], s: dict, what: str, label: str) -> str:
        """Run the CLI ``cmd`` (a reset or a rollback), SIGKILL it after ``s["delay"]`` seconds
        (from the start of its removal when ``s["phase"] == "removal"``) unless it ended first;
        returns ``completed``, ``killed``, ``failed`` (its error line kept) or ``hung``."""
        t0 = time.time()
        t = Trial(cmd, self.env)
        if s.get("phase") == "removal":
            self.wait_for_removing(t)
        try:
            t.proc.wait(s["delay"])
        except subprocess.TimeoutExpired:
            t.kill()
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
            self.problems.append(f"reset_kill: the {what} hung")
            return "hung"
        time.sleep(0.05)
        rc = t.proc.returncode
        outcome = ("completed" if rc == 0 else "killed" if rc in (-9, 137) else "failed")
        self.log(f"    reset_kill{label}: exit {rc} after {time.time() - t0:.1f} s "
                 f"(delay {s['delay']} s)")
        if outcome == "failed":
            err = next((x for x in t.lines if x.startswith("error")), None)
            self.errors.append(f"reset_kill: exit {rc}: {err or t.lines[-1:]}")
        return outcome

    def wait_for_removing(self, t: Trial, timeout: float = 120) -> bool:
        """Poll the ledger until a run of the job is 'removing' (the reset's transaction
        committed) or the CLI ended."""
        import sqlalchemy as sa
        engine = sa.create_engine(self.state)
        q = sa.text("SELECT COUNT(*) FROM sm_runs WHERE (job_name = :j OR pipeline = :p) "
                    "AND publish_state = 'removing'")
        end = time.time() + timeout
        try:
            while time.time() < end and t.proc.poll() is None:
                try:
                    with engine.connect() as c:
                        if c.execute(q, {"j": JOB, "p": PIPELINE}).scalar():
                            return True
                except Exception:  # noqa: BLE001 - no tables yet
                    pass
                time.sleep(0.01)
            return False
        finally:
            engine.dispose()

    def iceberg_state(self) -> dict:
        """The Iceberg target read by a checker process (Spark with the schedule's catalog):
        ``ids`` of the current snapshot and ``snapshots`` (see :func:`verify_iceberg`)."""
        t = Trial(self.base + ["--worker", "--verify"], self.env)
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
        time.sleep(0.05)
        out = [json.loads(x[8:]) for x in t.lines if x.startswith("ICEBERG ")]
        if not out:
            raise RuntimeError(f"the Iceberg checker failed (exit {t.proc.returncode}): "
                               f"{t.lines[-3:]}")
        return out[0]

    def ledger(self) -> list[dict]:
        try:
            return ledger_rows(self.state)
        except Exception as e:  # noqa: BLE001 - no run yet: the store has no tables
            if "sm_runs" in str(e):
                return []
            raise

    # -- recovery and the model
    def recover_and_check(self) -> list[str]:
        if self.clock_until > time.time():  # a pipeline's forward clock jump: wait it out
            time.sleep(self.clock_until - time.time())
        results = []
        for i in range(2):
            t = self.start()
            self.finish(t, "recovery")
            res = [json.loads(x[7:]) for x in t.lines if x.startswith("RESULT ")]
            if not res:
                self.problems.append(f"recovery run {i + 1} did not complete: {t.lines[-3:]}")
                return self.problems
            results.append(res[0])
        if results[-1]["status"] != "EMPTY" or results[-1]["records_written"]:
            self.problems.append(f"the last recovery run found new input: {results[-1]}")
        if self.job == "pipeline":
            return self.check_pipeline(results[-1]["snapshot_ts"])
        if self.job == "iceberg":  # one checker process: the ids and the snapshots
            ice = self.iceberg_state()
            ids = ice["ids"]
        else:
            ids = read_target_ids(self)
        counts = Counter(ids)
        expected = set(self.inputs.expected)
        dupes = sorted(r for r, c in counts.items() if c > 1)
        missing = sorted(expected - set(counts))
        unexpected = sorted(set(counts) - expected)
        for what, got in (("duplicated", dupes), ("missing", missing),
                          ("unexpected", unexpected)):
            if got:
                self.problems.append(f"{len(got)} record ids {what} in the target: {got[:5]}")
        if self.job == "iceberg":
            found, self.iceberg_unpublished = iceberg_problems(ice["snapshots"],
                                                               ledger_rows(self.state))
            self.problems.extend(found)
        if (self.target / "_sparkmark_staging").exists():
            self.problems.append("staging output left in the target (_sparkmark_staging)")
        if self.bucket is not None:
            left = s3_staged_keys(self.bucket)
            if left:
                self.problems.append(f"{len(left)} staged objects left in the bucket: {left[:3]}")
        staged = staged_rows(self)
        if staged:
            self.problems.append(f"{staged} rows left in the staging table {STAGE_TABLE}")
        rows = ledger_rows(self.state)
        bad = [(r["run_id"], r["status"]) for r in rows if r["status"] not in TERMINAL]
        if bad:
            self.problems.append(f"ledger rows not terminal after recovery: {bad}")
        removing = [r["run_id"] for r in rows if r["publish_state"] == "removing"]
        if removing:
            self.problems.append(f"rolled-back runs still 'removing' after recovery: {removing}")
        written = sum(r["records_written"] or 0 for r in rows if r["status"] == "SUCCEEDED")
        if written != len(counts):
            self.problems.append(f"records_written over SUCCEEDED rows is {written}, the target "
                                 f"holds {len(counts)} distinct ids")
        self.check_committed(rows)
        self.records = len(expected)
        self.statuses = Counter(r["status"] for r in rows)
        return self.problems

    def check_committed(self, rows: list[dict]) -> None:
        """Every run whose ``commit()`` returned is SUCCEEDED/EMPTY in the ledger, or
        ROLLED_BACK by a reset drawn after it."""
        status = {r["run_id"]: r["status"] for r in rows}
        lost = [(r, status.get(r)) for i, r in enumerate(self.committed)
                if status.get(r) not in ("SUCCEEDED", "EMPTY")
                and not (i < self.reset_seen and status.get(r) == "ROLLED_BACK")]
        if lost:
            self.problems.append(f"commit() returned but the ledger says otherwise: {lost}")

    def check_pipeline(self, last_snapshot: int) -> list[str]:
        """The pipeline's model check (see :func:`pipeline_problems`), after recovery."""
        from sparkmark.planning.windows import parse_time
        rows = pipeline_ledger_rows(self.state)
        targets = {m: read_id_runs(self.target / n) for m, n in PIPELINE_MODULES.items()}
        staged = [n for n in PIPELINE_MODULES.values()
                  if (self.target / n / "_sparkmark_staging").exists()]
        bookmarks = {m: (bookmark_of(self.state, f"{PIPELINE}.{m}") or {}).get("JobBookmark")
                     for m in PIPELINE_MODULES}
        self.pipeline_bookmark = bookmarks[1] or {}
        files = sorted(("file:" + str(p), p.stat().st_mtime_ns // 1_000_000)
                       for p in self.input.rglob("*.json"))
        self.problems.extend(pipeline_problems(
            self.inputs.expected, targets, rows, bookmarks, files,
            last_snapshot=last_snapshot,
            primordial_ts=parse_time(PIPELINE_PRIMORDIAL, "UTC", what="primordial"),
            staged=staged))
        self.check_committed(rows)
        self.records = len(self.inputs.expected)
        self.statuses = Counter(r["status"] for r in rows)
        return self.problems


def read_target_ids(sch: "Schedule") -> list[str]:
    """The record ids in the schedule's target (files, the PostgreSQL table, the parquet
    objects in the bucket, or the Iceberg table's current snapshot, read through Iceberg by a
    checker process)."""
    if sch.bucket is not None:
        return read_s3_ids(sch.bucket)
    if sch.job == "iceberg":
        return sch.iceberg_state()["ids"]
    if sch.job != "jdbc":
        return read_ids(sch.target)
    return table_ids(sch.data_sa, TARGET_TABLE)


def staged_rows(sch: "Schedule") -> int:
    """Rows left in the JDBC sink's staging table (0 for the files job)."""
    return len(table_ids(sch.data_sa, STAGE_TABLE)) if sch.job == "jdbc" else 0
