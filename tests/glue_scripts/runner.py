"""Run several Glue scripts in one Python process, each as ``python script.py ARGS`` would.

    python runner.py plan.json results.json

``plan.json``: ``{"scripts": [{"name": ..., "script": path, "argv": [...], "env": {...}}]}``.
Each script runs as ``__main__`` with its own ``sys.argv`` and environment additions; when it
ends, the running Glue jobs are finished as a process exit would finish them
(``finish_running_jobs``) and the SparkContext is stopped, so the next script's
``SparkContext()`` starts a fresh one (in the same JVM: one JVM start for all scripts).
``results.json`` gets ``{name: {"code": exit code, "error": traceback or null}}``.
"""
import json
import os
import runpy
import sys
import time
import traceback

from pyspark import SparkContext

from sparkmark.glue.job import finish_running_jobs

plan_file, results_file = sys.argv[1], sys.argv[2]
plan = json.load(open(plan_file))
results = {}
for item in plan["scripts"]:
    saved = dict(os.environ)
    os.environ.update(item.get("env", {}))
    sys.argv = [item["script"], *item["argv"]]
    code, error, started = 0, None, time.monotonic()
    try:
        runpy.run_path(item["script"], run_name="__main__")
        finish_running_jobs()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finish_running_jobs()
    except BaseException as e:  # noqa: BLE001 - reported, like a script's non-zero exit
        code, error = 1, traceback.format_exc()
        finish_running_jobs(e)
    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    os.environ.clear()
    os.environ.update(saved)
    results[item["name"]] = {"code": code, "error": error}
    print(f"{item['name']}: exit {code} in {time.monotonic() - started:.1f}s", file=sys.stderr,
          flush=True)
json.dump(results, open(results_file, "w"))
