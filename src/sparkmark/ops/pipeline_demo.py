"""The pipeline part of ``sparkmark demo``: bronze -> silver -> gold with a rollback and reload.

Order files land in ``<directory>/pipeline/landing/orders`` one day at a time (their mtimes and
the pipeline clock are set to the simulated arrival times).  Bronze picks them up with file
bookmarks; silver cleans the orders in its window (drops test orders, rows without an amount
and duplicates); gold sums the daily revenue.  A bug shipped in the second run (silver forgot to
drop test orders) is undone with a rollback by run id, and the next run reloads from the cut.
The verdict checks every target against the generated data: each order exactly once, and the
daily revenue right to the cent.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

from sparkmark.core.clock import format_ts
from sparkmark.planning.windows import DAY_MS, parse_time
from sparkmark.core.status import RunStatus

START_DAY = "2024-01-01"
DAYS = 6                       # days of orders; day k's file arrives just before day k+1
ARRIVAL_SLACK_MS = 60_000      # a file lands one minute before the next snapshot


def _say(console: Any, text: str) -> None:
    try:
        console.print(text, markup=False, highlight=False)
    except TypeError:
        console.print(text)


def _orders_for_day(day: int, day_start: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for i in range(rng.randint(12, 20)):
        ts = day_start + rng.randrange(DAY_MS)
        row = {"order_id": day * 1000 + i, "order_ts": (format_ts(ts, "UTC") or "").replace(" ", "T"),
               "customer": f"c{rng.randint(1, 9)}",
               "amount": round(rng.uniform(5, 200), 2),
               "status": "test" if rng.random() < 0.15 else "paid"}
        if rng.random() < 0.1:
            row["amount"] = None
        rows.append(row)
    rows.append(dict(rows[0]))     # a duplicate sent twice in the same file
    return rows


def _expected(all_rows: list[dict[str, Any]]) -> tuple[set[int], dict[str, float]]:
    valid: dict[int, dict[str, Any]] = {}
    for r in all_rows:
        if r["amount"] is not None and r["status"] != "test":
            valid[r["order_id"]] = r
    revenue: dict[str, float] = {}
    for r in valid.values():
        day = r["order_ts"][:10]
        revenue[day] = round(revenue.get(day, 0.0) + r["amount"], 2)
    return set(valid), revenue


def run_pipeline_demo(directory: str | os.PathLike, console: Any, spark: Any) -> bool:
    """Run the demo in ``<directory>/pipeline``; print what happens; return the verdict."""
    from pyspark.sql import functions as F

    from sparkmark.lifecycle.pipeline import Pipeline

    root = Path(directory) / "pipeline"
    if root.exists():
        shutil.rmtree(root)
    landing = root / "landing" / "orders"
    landing.mkdir(parents=True)
    bronze_t, silver_t, gold_t = (str(root / "bronze" / "orders"), str(root / "silver" / "orders"),
                                  str(root / "gold" / "daily_revenue"))
    day0 = parse_time(START_DAY)
    now = [day0]
    rng = random.Random(7)
    generated: list[dict[str, Any]] = []
    bug = {"on": False}

    def land(day: int) -> None:
        rows = _orders_for_day(day, day0 + day * DAY_MS, rng)
        generated.extend(rows)
        path = landing / f"orders-{day:02d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        arrival = (day0 + (day + 1) * DAY_MS - ARRIVAL_SLACK_MS) / 1000
        os.utime(path, (arrival, arrival))

    p = Pipeline("demo_orders", spark, state=f"sqlite:///{root / 'state.db'}",
                 primordial_date=START_DAY, max_days_to_load=3, clock=lambda: now[0])

    @p.module(id=1001, name="Bronze_Orders", layer="bronze", target=bronze_t)
    def bronze(ctx):
        return ctx.job.read.files(str(landing), format="json", transformation_ctx="order_files",
                                  options={"schema": "order_id long, order_ts string, "
                                                     "customer string, amount double, "
                                                     "status string"})

    @p.module(id=2001, name="Silver_Orders", layer="silver", target=silver_t,
              depends_on=[1001])
    def silver(ctx):
        df = (ctx.spark.read.parquet(bronze_t)
              .withColumn("order_time", F.to_timestamp("order_ts")))
        df = ctx.window(df, "order_time").where(F.col("amount").isNotNull())
        if not bug["on"]:
            df = df.where(F.col("status") != "test")
        return df.dropDuplicates(["order_id"]).select("order_id", "order_time", "customer",
                                                      "amount", "status")

    @p.module(id=3001, name="Gold_DailyRevenue", layer="gold", target=gold_t,
              depends_on=[2001])
    def gold(ctx):
        df = ctx.window(ctx.spark.read.parquet(silver_t), "order_time")
        return (df.groupBy(F.date_format("order_time", "yyyy-MM-dd").alias("day"))
                .agg(F.round(F.sum("amount"), 2).alias("revenue"),
                     F.count("*").alias("orders")))

    def run(label: str):
        summary = p.run()
        _say(console, f"\n== {label} (snapshot {format_ts(now[0])})")
        _say(console, str(summary))
        return summary

    _say(console, f"Pipeline demo in {root}: bronze (file bookmarks) -> silver (cleaned, "
                  "windowed) -> gold (daily revenue); max_days_to_load=3")
    for d in range(3):
        land(d)
    now[0] = day0 + 3 * DAY_MS
    ok = not run("run 1: three days of files").failed
    land(3)
    now[0] = day0 + 4 * DAY_MS
    bug["on"] = True
    buggy = run("run 2: day 3 arrives -- and a silver change that forgets to drop test orders")
    ok &= not buggy.failed
    land(4)
    now[0] = day0 + 5 * DAY_MS
    ok &= not run("run 3: day 4 arrives").failed

    bug["on"] = False
    _say(console, f"\n== the bug is found and fixed; roll back silver and gold from the buggy "
                  f"run {buggy.run_id}")
    _say(console, str(p.rollback(modules=[2001, 3001], run_id=buggy.run_id, dry_run=True)))
    plan = p.rollback(modules=[2001, 3001], run_id=buggy.run_id)
    _say(console, str(plan))
    land(5)
    now[0] = day0 + 6 * DAY_MS
    reload = run("run 4: day 5 arrives; silver and gold reload from the cut")
    ok &= not reload.failed

    _say(console, "\n== the ledger (pipeline report; times are simulated: the demo's clock "
                  "jumps between runs, so run_start == run_end)")
    from sparkmark.state.ledger import report_rows
    rows = report_rows(p.store, pipeline=p.name)
    cols = ["module_id", "module_name", "status", "from", "until", "records_written"]
    from sparkmark.lifecycle.pipeline import text_table
    _say(console, text_table(rows, cols))

    # ------------------------------------------------------------------ verdict
    valid_ids, revenue = _expected(generated)
    bronze_n = spark.read.parquet(bronze_t).count()
    silver_ids = [r.order_id for r in spark.read.parquet(silver_t).select("order_id").collect()]
    gold_rows = {r.day: (r.revenue, r.orders) for r in spark.read.parquet(gold_t).collect()}
    gold_days = spark.read.parquet(gold_t).groupBy("day").count().where("count > 1").count()
    checks = [
        ("bronze holds every landed record exactly once", bronze_n == len(generated)),
        ("silver holds every valid order exactly once",
         sorted(silver_ids) == sorted(valid_ids)),
        ("gold has one row per day", gold_days == 0 and set(gold_rows) == set(revenue)),
        ("gold daily revenue is right to the cent",
         all(abs(gold_rows[d][0] - v) < 0.005 for d, v in revenue.items() if d in gold_rows)),
        ("the buggy runs are ROLLED_BACK in the ledger",
         {r["status"] for r in rows if r["run_id"] in set(plan.run_ids)} == {RunStatus.ROLLED_BACK}),
        ("every module caught up with the snapshot",
         all(r.until_ts == now[0] for r in reload.results)),
    ]
    _say(console, "")
    for text, passed in checks:
        _say(console, f"  [{'ok' if passed else 'FAIL'}] {text}")
    ok = bool(ok and all(passed for _, passed in checks))
    _say(console, f"pipeline demo verdict: {'PASS' if ok else 'FAIL'}")
    return ok
