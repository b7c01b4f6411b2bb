"""Benchmark: the built-in Avro reader (fastavro in ``mapInArrow``) against the Spark-4-only
Python data source it replaced (not a test).

Writes F avro files of R rows each (id, customer, amount, a nullable note, a timestamp) in
``day=N`` partitions, then reads them all and counts (``df.agg(sum(id))`` so every column
value crosses into the JVM) with:

  (new) ``sparkmark.sources.avro.read_avro``: ``spark.range`` + ``mapInArrow``, Spark 3.5 and 4.x;
  (old) the ``pyspark.sql.datasource`` reader sparkmark used up to commit 371e432 (Spark 4
        only), loaded from git history into a temporary module; skipped on Spark 3.5 or when
        the commit is not in this clone.

Both read the same files with the same partition count (2 x default parallelism), best of
``--repeat``.  Prints a table and writes benchmarks/results/avro.json (avro35.json on 3.5).

    .venv/bin/python benchmarks/avro.py --files 200 --rows 5000 --repeat 3
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD_COMMIT = "371e432"
ROOT = Path(__file__).resolve().parent.parent


def make_files(d: Path, files: int, rows: int) -> list[str]:
    import fastavro
    schema = {"type": "record", "name": "order", "fields": [
        {"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"}, {"name": "note", "type": ["null", "string"]},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    parsed = fastavro.parse_schema(schema)
    paths = []
    for f in range(files):
        p = d / f"day={f % 10}" / f"part-{f:05d}.avro"
        p.parent.mkdir(parents=True, exist_ok=True)
        base = f * rows
        recs = ({"id": base + i, "customer": f"c{(base + i) % 97}", "amount": (base + i) * 0.5,
                 "note": None if i % 3 else f"n{i}", "ts": 1_700_000_000_000 + base + i}
                for i in range(rows))
        with open(p, "wb") as fo:
            fastavro.writer(fo, parsed, recs)
        paths.append(f"file:{p}")
    return paths


def old_data_source():
    """The pre-3.5 reader, from git history; None when unavailable."""
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show",
                               f"{OLD_COMMIT}:src/sparkmark/sources/avro.py"],
                              check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp(prefix="sm-avro-old-")) / "sparkmark_old_avro.py"
    path.write_text(text)
    sys.path.insert(0, str(path.parent))  # and for the Python workers, started after this:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(path.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    spec = importlib.util.spec_from_file_location("sparkmark_old_avro", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sparkmark_old_avro"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    from pyspark.sql import functions as F

    from sparkmark.engine import compat
    from sparkmark.sources.avro import read_avro
    from sparkmark.engine.spark import local_session

    old = old_data_source() if compat.pyspark_version() >= (4, 0) else None
    spark = local_session("bench-avro")
    version = spark.version
    parts = compat.default_parallelism(spark) * 2
    with tempfile.TemporaryDirectory(prefix="sm-avro-") as tmp:
        root = Path(tmp) / "in"
        t = time.perf_counter()
        paths = make_files(root, a.files, a.rows)
        gen_s = time.perf_counter() - t
        base = f"file:{root}"
        expect = sum(range(a.files * a.rows))

        def run_new():
            df = read_avro(spark, paths, base, num_partitions=parts)
            return df.agg(F.sum("id"), F.count("note"), F.max("ts"), F.sum("day")).collect()[0]

        def run_old():
            df = (spark.read.format(old.NAME).option("paths", json.dumps(paths))
                  .option("numPartitions", str(parts)).option("basePath", base).load())
            return df.agg(F.sum("id"), F.count("note"), F.max("ts"), F.sum("day")).collect()[0]

        if old is not None:
            spark.dataSource.register(old.AvroDataSource)
        # one untimed warm-up each (Python workers, imports, JIT), then interleaved timed runs
        # so that the load of a shared machine falls on both alike
        readers = {"new": run_new} | ({"old": run_old} if old is not None else {})
        rows = {k: fn() for k, fn in readers.items()}
        assert rows["new"][0] == expect, (rows["new"], expect)
        if "old" in rows:
            assert tuple(rows["old"]) == tuple(rows["new"]), rows
        times: dict[str, list[float]] = {k: [] for k in readers}
        for _ in range(a.repeat):
            for k, fn in readers.items():
                t = time.perf_counter()
                fn()
                times[k].append(round(time.perf_counter() - t, 3))
        results = {"new_mapInArrow_s": min(times["new"]), "new_runs_s": times["new"]}
        if "old" in times:
            results["old_datasource_s"] = min(times["old"])
            results["old_runs_s"] = times["old"]
            results["new_over_old"] = round(min(times["new"]) / min(times["old"]), 3)

    load = os.getloadavg()
    out = {"spark": version, "machine": {"cores": os.cpu_count(), "loadavg_1m": round(load[0], 2)},
           "files": a.files, "rows_per_file": a.rows, "partitions": parts, "repeat": a.repeat,
           "generate_s": round(gen_s, 2), **results}
    print(f"Spark {version}: {a.files} files x {a.rows} rows = {a.files * a.rows:,} rows, "
          f"{parts} partitions, best of {a.repeat} after a warm-up (load avg {load[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    print(f"{'reader':<44}{'seconds':>10}")
    print(f"{'new: fastavro in mapInArrow (3.5 and 4.x)':<44}{results['new_mapInArrow_s']:>10.2f}")
    if "old_datasource_s" in results:
        print(f"{'old: Python data source (4.x only)':<44}{results['old_datasource_s']:>10.2f}")
        print(f"{'new / old':<44}{results['new_over_old']:>10.2f}")
    else:
        print("old: Python data source: not run (Spark 3.5, or commit "
              f"{OLD_COMMIT} not in this clone)")
    dest = Path(a.out) if a.out else ROOT / "benchmarks" / "results" / (
        "avro.json" if compat.is_spark4(spark) else "avro35.json")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")
    spark.stop()


if __name__ == "__main__":
    main()
