"""``benchmarks/chaos.py --simulate``: many seeded schedules in one process, the planted-bug
check, shrinking and replay.

    python benchmarks/chaos.py --simulate --schedules 1000 --seed 1   # both job kinds
    python benchmarks/chaos.py --simulate --schedules 200 --jobs pipeline
    python benchmarks/chaos.py --simulate --planted
    python benchmarks/chaos.py --simulate --sweep                     # each kind
    python benchmarks/chaos.py --simulate --replay '{"seed": 1000007, "keep": [2, 5], "job": "files"}'
"""
from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from chaos_harness.sim.planted import PLANTED
from chaos_harness.sim.run import KINDS, Options, Result, draw_kind, fits, run_schedule
from chaos_harness.sim.world import World

RESULTS = Path(__file__).resolve().parents[2] / "results"


def schedule_seed(seed: int, i: int) -> int:
    """The seed of schedule ``i`` of a run with ``--seed seed``."""
    return seed * 1_000_000 + i


def _workdir() -> str:
    return tempfile.mkdtemp(prefix="sparkmark-sim-")


def parse_kinds(text: str | None) -> tuple[str, ...] | None:
    """``--jobs files,pipeline`` -> the simulated job kinds (None: all of them)."""
    if text is None:
        return None
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise SystemExit(f"--simulate --jobs: give some of {', '.join(KINDS)}, not {text!r}")
    return kinds


def shrink(seed: int, drawn: list[int], patches: Callable[[World], Any] | None = None,
           opts: Options | None = None, budget: int = 60,
           job: str | None = None) -> tuple[list[int], list[str]]:
    """The fewest faults (by their ordinals) of a failing schedule that still fail it: each
    dropped in turn while the schedule still fails (at most ``budget`` re-runs).  With
    ``patches`` (a planted bug) a smaller schedule counts only if it passes without them."""
    keep = list(drawn)
    problems = run_schedule(seed, _workdir(), opts, patches, keep=keep, job=job).problems
    runs = 1
    i = 0
    while i < len(keep) and runs < budget:
        trial = keep[:i] + keep[i + 1:]
        r = run_schedule(seed, _workdir(), opts, patches, keep=trial, job=job)
        runs += 1
        if r.problems and patches is not None and \
                run_schedule(seed, _workdir(), opts, keep=trial, job=job).problems:
            i += 1  # it fails without the bug too: not a smaller catch of this bug
            continue
        if r.problems:
            keep, problems = trial, r.problems
        else:
            i += 1
    return keep, problems


def simulate(schedules: int, seed: int, *, planted: str | None = None,
             do_shrink: bool = True, out: Path | None = None,
             progress: bool = True, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run ``schedules`` schedules from ``seed``, each of a job kind drawn among ``kinds``
    (default all) from its seed; returns (and writes) the report.  With ``planted`` it stops
    at the first schedule that fails with the bug and passes without."""
    logging.disable(logging.WARNING)  # the product's warnings about injected faults
    t0 = time.monotonic()
    faults: Counter = Counter()
    per_kind: dict[str, Counter] = {k: Counter() for k in kinds or KINDS}
    violations = []
    hashes = hashlib.sha256()
    patches = PLANTED[planted] if planted else None
    steps = 0
    for i in range(schedules):
        s = schedule_seed(seed, i)
        job = draw_kind(s, kinds)
        r = run_schedule(s, _workdir(), patches=patches, job=job)
        faults.update(r.faults)
        per_kind[job].update(r.faults)
        per_kind[job]["schedules"] += 1
        steps += r.steps
        hashes.update(r.trace_hash.encode())
        if r.problems and planted and run_schedule(s, _workdir(), job=job).problems:
            continue  # it fails without the bug too: not this bug's catch
        if r.problems:
            keep, problems = (shrink(s, r.drawn, patches, job=job) if do_shrink
                              else (r.drawn, r.problems))
            violations.append({"seed": s, "job": job, "problems": problems[:5],
                               "replay": json.dumps({"seed": s, "keep": keep, "job": job,
                                                     **({"planted": planted} if planted else {})
                                                     })})
            if planted:
                break
        if progress and (i + 1) % 100 == 0:
            print(f"  {i + 1} schedules, {round(time.monotonic() - t0, 1)} s, "
                  f"{len(violations)} violations", flush=True)
    report = {"schedules": i + 1 if schedules else 0, "seed": seed,
              "jobs": list(kinds or KINDS),
              "faults": dict(sorted(faults.items())),
              "faults_per_job": {k: dict(sorted(c.items())) for k, c in per_kind.items()},
              "steps": steps,
              "violations": violations, "elapsed_s": round(time.monotonic() - t0, 1),
              "trace_hash": hashes.hexdigest()[:16]}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
    return report


def planted_check(seed: int, budget: int = 1000, out: Path | None = None,
                  bugs: list[str] | None = None,
                  kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Each planted bug, schedules from ``seed`` until one is caught (at most ``budget``)."""
    found: dict[str, Any] = {}
    for bug in bugs or list(PLANTED):
        t0 = time.monotonic()
        rep = simulate(budget, seed, planted=bug, progress=False, kinds=kinds)
        v = rep["violations"]
        found[bug] = {"caught": bool(v), "schedules_to_catch": rep["schedules"] if v else None,
                      "job": v[0]["job"] if v else None,
                      "replay": v[0]["replay"] if v else None,
                      "problems": v[0]["problems"][:2] if v else [],
                      "elapsed_s": round(time.monotonic() - t0, 1)}
        said = f"caught after {rep['schedules']}" if v else f"NOT caught in {budget}"
        print(f"  {bug}: {said} schedules ({found[bug]['elapsed_s']} s)", flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(found, indent=2))
    return found


SWEPT = ("kill", "outage", "lost_answer", "fs_error")


def sweep(seed: int = 1, out: Path | None = None,
          kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Per job kind, one fault at every I/O point of a clean one-episode run: every
    (step, fault) that fits the point, each its own schedule."""
    logging.disable(logging.WARNING)
    t0 = time.monotonic()
    base = Options(rate=0.0, episodes=1, race=0.0, operator=0.0, env_rate=0.0)
    per_kind: dict[str, Any] = {}
    violations = []
    for job in kinds or KINDS:
        t1 = time.monotonic()
        ref = run_schedule(seed, _workdir(), base, job=job)
        assert not ref.problems, (job, ref.problems)
        runs: Counter = Counter()
        for step, kind in ref.points:
            for fault in SWEPT:
                if not fits(fault, kind):
                    continue
                opts = Options(**{**base.__dict__, "forced": {step: fault}})
                r = run_schedule(seed, _workdir(), opts, job=job)
                runs[fault] += 1
                if r.problems:
                    violations.append({"job": job, "step": step, "point": kind,
                                       "fault": fault, "problems": r.problems[:3]})
        per_kind[job] = {"points": len(ref.points), "schedules": sum(runs.values()),
                         "faults": dict(runs), "elapsed_s": round(time.monotonic() - t1, 1)}
    report = {"jobs": per_kind, "points": sum(k["points"] for k in per_kind.values()),
              "schedules": sum(k["schedules"] for k in per_kind.values()),
              "violations": violations, "elapsed_s": round(time.monotonic() - t0, 1)}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
    return report


def replay(text: str) -> Result:
    """Run one schedule from its replay JSON (``{"seed": S, "keep": [...], "job": K,
    "planted": B}``; without ``job``: the files kind, as replays were before there were
    others)."""
    logging.disable(logging.WARNING)
    spec = json.loads(text)
    patches = PLANTED[spec["planted"]] if spec.get("planted") else None
    return run_schedule(int(spec["seed"]), _workdir(), patches=patches, keep=spec.get("keep"),
                        keep_trace=True, job=spec.get("job", "files"))


def main(a: Any) -> int:
    """The ``--simulate`` command line (arguments parsed by chaos.py)."""
    if a.replay:
        r = replay(a.replay)
        print("\n".join(r.trace))
        print(f"faults={r.faults} steps={r.steps} problems={r.problems}")
        print(f"trace_hash={r.trace_hash}")
        return 1 if r.problems else 0
    kinds = parse_kinds(a.jobs if getattr(a, "jobs_given", False) else None)
    if a.sweep:
        rep = sweep(a.seed, RESULTS / "chaos-sim-sweep.json", kinds)
        for v in rep["violations"]:
            print(f"VIOLATION {v}")
        for job, k in rep["jobs"].items():
            print(f"  {job}: {k['points']} I/O points, {k['schedules']} schedules "
                  f"{k['faults']}, {k['elapsed_s']} s")
        print(f"sweep: {rep['points']} I/O points, {rep['schedules']} schedules, "
              f"violations={len(rep['violations'])}, elapsed_s={rep['elapsed_s']}")
        return 1 if rep["violations"] else 0
    if a.planted:
        found = planted_check(a.seed, a.schedules if a.schedules_given else 1000,
                              RESULTS / "chaos-planted.json", kinds=kinds)
        missed = [b for b, f in found.items() if not f["caught"]]
        print(f"planted: {len(found) - len(missed)}/{len(found)} caught; missed: {missed}")
        return 1 if missed else 0
    rep = simulate(a.schedules, a.seed, do_shrink=not a.no_shrink, kinds=kinds,
                   out=Path(a.json) if a.json_given else RESULTS / "chaos-sim.json")
    for v in rep["violations"]:
        print(f"VIOLATION seed={v['seed']}: {v['problems']}")
        print(f"  replay: python benchmarks/chaos.py --simulate --replay '{v['replay']}'")
    for job, c in rep["faults_per_job"].items():
        print(f"  {job}: {c}")
    print(f"schedules={rep['schedules']} faults={rep['faults']} "
          f"violations={len(rep['violations'])} elapsed_s={rep['elapsed_s']}")
    print(f"trace_hash={rep['trace_hash']}")
    return 1 if rep["violations"] else 0
