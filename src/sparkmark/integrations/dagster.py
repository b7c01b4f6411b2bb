"""sparkmark inside Dagster (``pip install 'sparkmark[dagster]'``).

- :class:`SparkmarkResource`: the state store as a Dagster resource (ledger rows, bookmarks);
- :func:`ledger_metadata`: a ledger row as Dagster metadata (run, status, counts, windows,
  bookmark versions, per-source file counts);
- :func:`materialize_job_result`: the ``MaterializeResult`` of a plain :class:`~sparkmark.Job`
  run inside a normal ``@asset`` (a FAILED run fails the asset);
- :func:`sparkmark_pipeline_assets`: a pipeline's modules as one subsettable ``multi_asset``,
  with an asset check per module that fails on FAILED/SKIPPED;
- :func:`report_to_pipes`: report a run to Dagster from a process launched by Dagster Pipes.

Example::

    import dagster as dg
    from sparkmark import Job
    from sparkmark.integrations.dagster import SparkmarkResource, materialize_job_result

    @dg.asset
    def orders(sparkmark: SparkmarkResource) -> dg.MaterializeResult:
        with Job(spark, state=sparkmark.state).run(
                "orders", {"job_bookmark_option": "job-bookmark-enable"}) as job:
            job.write(job.read.files("in/orders", transformation_ctx="src"), "out/orders",
                      transformation_ctx="sink")
        return materialize_job_result(job)

    defs = dg.Definitions(assets=[orders],
                          resources={"sparkmark": SparkmarkResource(state="sqlite:///st.db")})

This module needs Dagster: ``import sparkmark`` never imports it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

try:
    import dagster as dg
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError("sparkmark.integrations.dagster needs Dagster: "
                      "pip install 'sparkmark[dagster]'") from e

from sparkmark.state.ledger import ledger_rows
from sparkmark.core.status import RunStatus
from sparkmark.integrations.dagster_pipes import (BAD_STATUSES, asset_name, ledger_row, metadata_fields,
                            report_to_pipes)

if TYPE_CHECKING:
    from sparkmark.ops.bookmarks import Bookmarks
    from sparkmark.lifecycle.job import Job
    from sparkmark.lifecycle.pipeline import Pipeline

__all__ = ["CHECK_NAME", "SparkmarkResource", "ledger_metadata", "materialize_job_result",
           "module_asset_key", "report_to_pipes", "sparkmark_pipeline_assets",
           "status_check_spec"]

#: The name of the asset check that fails when a sparkmark run FAILED or was SKIPPED.
CHECK_NAME = "sparkmark_status"
# ---------------------------------------------------------------------- the resource
class SparkmarkResource(dg.ConfigurableResource):
    """The sparkmark state store as a Dagster resource.

    ``state``: the store's SQLAlchemy URL; ``None`` is sparkmark's default (env
    ``SPARKMARK_STATE``, else ``sqlite:///.sparkmark/state.db``).

    Example::

        @dg.asset
        def report(sparkmark: SparkmarkResource):
            return dg.MaterializeResult(metadata=ledger_metadata(
                sparkmark.ledger(job="orders", last=1)[-1]))

        dg.Definitions(assets=[report],
                       resources={"sparkmark": SparkmarkResource(state="postgresql://...")})
    """

    state: str | None = None

    def ledger(self, job: str | None = None, pipeline: str | None = None,
               last: int | None = None) -> list[dict[str, Any]]:
        """The raw ledger rows (times in epoch ms), oldest first (see
        :func:`sparkmark.state.ledger.ledger_rows`).  Example: ``sparkmark.ledger(job="orders",
        last=1)``"""
        return ledger_rows(self.state, job=job, pipeline=pipeline, last=last)

    def bookmarks(self) -> "Bookmarks":
        """A :class:`sparkmark.Bookmarks` on this store.  Example:
        ``sparkmark.bookmarks().get("orders")["Version"]``"""
        from sparkmark.ops.bookmarks import Bookmarks
        return Bookmarks(self.state)

    def job(self, spark: Any, **kwargs: Any) -> "Job":
        """A :class:`sparkmark.Job` on this store (``kwargs``: ``clock``, ...).  Example::

            with sparkmark.job(spark).run("orders", args) as job:
                ...
        """
        from sparkmark.lifecycle.job import Job
        return Job(spark, state=self.state, **kwargs)


# ---------------------------------------------------------------------- metadata
def ledger_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ledger row (from :func:`sparkmark.state.ledger.ledger_rows` / ``sm_runs``) as Dagster
    metadata.

    ``run_id``, ``status``, ``job_name`` (and ``pipeline``, ``module_name``, ``layer``...) as
    text; ``run_number``, ``attempt``, ``records_read``, ``records_written``,
    ``start_version``/``end_version`` (the bookmark version before and after) as ints; the
    window ``from``/``until``, ``snapshot``, ``run_start``/``run_end`` as timestamps;
    ``error``; from the row's config: ``files_read``, ``late_files``, ``note``, ``new_input``
    and ``sources`` (JSON: per ``transformation_ctx`` its files, bytes, listing mode, ...).
    Fields the row does not have are left out.

    Example::

        row = SparkmarkResource(state=url).ledger(job="orders", last=1)[-1]
        dg.MaterializeResult(metadata=ledger_metadata(row))
    """
    mv = dg.MetadataValue
    make: dict[str, Callable[[Any], Any]] = {"text": mv.text, "int": mv.int,
                                             "timestamp": mv.timestamp, "json": mv.json,
                                             "bool": mv.bool}
    return {k: make[kind](value) for k, (kind, value) in metadata_fields(row).items()}


def _failure(row: Mapping[str, Any]) -> dg.Failure:
    what = row.get("module_name") or row.get("job_name")
    return dg.Failure(description=f"sparkmark run {row.get('run_id')} of {what} ended "
                                  f"{row.get('status')}: {row.get('error') or ''}".rstrip(": "),
                      metadata=ledger_metadata(row))


def _check_result(row: Mapping[str, Any], check_name: str,
                  asset_key: dg.AssetKey | None = None) -> dg.AssetCheckResult:
    status = str(row.get("status"))
    return dg.AssetCheckResult(
        passed=status not in BAD_STATUSES, asset_key=asset_key, check_name=check_name,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(f"sparkmark run {row.get('run_id')} ended {status}"
                     + (f": {str(row['error']).splitlines()[0][:300]}"
                        if row.get("error") else "")),
        metadata={"run_id": dg.MetadataValue.text(str(row.get("run_id"))),
                  "status": dg.MetadataValue.text(status)})


def status_check_spec(asset: Any, name: str = CHECK_NAME) -> dg.AssetCheckSpec:
    """The asset check :func:`materialize_job_result` reports (``check_name=``): passes unless
    the run FAILED or was SKIPPED.

    Example::

        @dg.asset(check_specs=[status_check_spec("orders")])
        def orders():
            ...
            return materialize_job_result(job, check_name=CHECK_NAME)
    """
    return dg.AssetCheckSpec(name, asset=asset,
                             description="the sparkmark run did not FAIL and was not SKIPPED")


def materialize_job_result(job_or_row: "Job | Mapping[str, Any]", *,
                           asset_key: Any = None, check_name: str | None = None,
                           metadata: Mapping[str, Any] | None = None) -> dg.MaterializeResult:
    """The ``MaterializeResult`` of a sparkmark run, its ledger row as metadata.

    ``job_or_row``: the :class:`~sparkmark.Job` after its run (``with job.run(...)`` has
    committed it), or a ledger row.  A FAILED or SKIPPED run raises ``dagster.Failure`` (with the
    ledger metadata) so the asset fails; the run stays in the ledger either way.  (Inside
    ``with Job(...).run(...)`` an exception already records FAILED and fails the asset.)
    ``check_name``: also report the asset check of :func:`status_check_spec` (passed).
    An EMPTY run (no new input) is materialized: the asset is up to date.

    Example::

        @dg.asset(deps=["landing_orders"], check_specs=[status_check_spec("orders")])
        def orders(sparkmark: SparkmarkResource):
            with sparkmark.job(spark).run("orders", ENABLE_ARGS) as job:
                job.write(job.read.files("in", transformation_ctx="src"), "out",
                          transformation_ctx="sink")
            return materialize_job_result(job, check_name=CHECK_NAME)
    """
    row = ledger_row(job_or_row)
    if str(row.get("status")) in BAD_STATUSES:
        raise _failure(row)
    checks = [] if check_name is None else [_check_result(
        row, check_name, None if asset_key is None else dg.AssetKey.from_coercible(asset_key))]
    return dg.MaterializeResult(asset_key=asset_key,
                                metadata={**ledger_metadata(row), **dict(metadata or {})},
                                check_results=checks)


# ---------------------------------------------------------------------- pipelines
def module_asset_key(pipeline: "Pipeline", module_id: int,
                     key_prefix: str | Sequence[str] | None = None) -> dg.AssetKey:
    """The asset key :func:`sparkmark_pipeline_assets` gives a module: its name (characters
    other than letters, digits and ``_`` become ``_``), after ``key_prefix``.

    Example: ``module_asset_key(p, 1004)`` is ``AssetKey(["Bronze_AuditLogs"])``.
    """
    prefix = [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])
    names = [asset_name(m.name) for m in pipeline.modules.values()]
    name = asset_name(pipeline.modules[module_id].name)
    if names.count(name) > 1:  # two modules with the same name: the id tells them apart
        name = f"{name}_{module_id}"
    return dg.AssetKey([*prefix, name])


def sparkmark_pipeline_assets(pipeline: "Pipeline | str | Path", *, name: str | None = None,
                              key_prefix: str | Sequence[str] | None = None,
                              group_by: str = "pipeline", check_name: str = CHECK_NAME,
                              materialize_empty: bool = True) -> dg.AssetsDefinition:
    """A pipeline's modules as one Dagster ``multi_asset``: one asset per module (key
    :func:`module_asset_key`, deps from ``depends_on``, group the pipeline name or, with
    ``group_by="layer"``, the module's layer) and one asset check ``check_name`` per module.

    ``pipeline``: a :class:`~sparkmark.Pipeline` or a pipeline file (loaded now, with
    :func:`sparkmark.lifecycle.pipeline.load_pipeline_file`).  It is subsettable: materializing some of
    its assets runs ``Pipeline.run(modules=[their ids])`` (one pipeline run, one snapshot).

    Per module run:

    - ``SUCCEEDED``: materialized with :func:`ledger_metadata`; the check passes;
    - ``EMPTY`` (no new input, or an empty window): materialized too (the asset is up to date
      through ``until``; metadata ``status`` says EMPTY), the check passes; with
      ``materialize_empty=False`` it is not materialized (the check still passes);
    - ``FAILED`` / ``SKIPPED`` (a dependency failed): not materialized; the check fails with
      severity ERROR; and after all modules the step raises ``dagster.Failure``, so the Dagster
      run fails as ``sparkmark run`` exits non-zero.  The ledger has the rows either way.

    Example::

        p = load_pipeline_file("pipelines/shop.py")
        defs = dg.Definitions(assets=[sparkmark_pipeline_assets(p, group_by="layer")])
    """
    if isinstance(pipeline, (str, Path)):
        from sparkmark.lifecycle.pipeline import load_pipeline_file
        pipeline = load_pipeline_file(pipeline)
    p = pipeline
    if group_by not in ("pipeline", "layer"):
        raise ValueError(f"group_by must be 'pipeline' or 'layer', not {group_by!r}")
    keys = {mid: module_asset_key(p, mid, key_prefix) for mid in p.order()}
    specs, checks = [], []
    for mid, key in keys.items():
        m = p.modules[mid]
        specs.append(dg.AssetSpec(
            key, deps=[keys[d] for d in m.depends_on if d in keys], skippable=True,
            group_name=asset_name(p.name if group_by == "pipeline" else m.layer),
            description=f"module {mid} ({m.name}, layer {m.layer}) of sparkmark pipeline "
                        f"{p.name}; target {m.target}",
            metadata={"module_id": mid, "layer": m.layer, "target": m.target,
                      "job_name": p.job_name(mid)},
            kinds={"spark"}))
        checks.append(dg.AssetCheckSpec(
            check_name, asset=key,
            description="the module's run did not FAIL and was not SKIPPED"))

    @dg.multi_asset(name=name or f"sparkmark_{asset_name(p.name)}", specs=specs, check_specs=checks,
                    can_subset=True)
    def _pipeline_assets(context) -> Iterator[Any]:  # (a string annotation is refused)
        selected = set(context.selected_asset_keys)
        chosen_checks = set(context.selected_asset_check_keys)
        ids = [mid for mid, key in keys.items() if key in selected]
        context.log.info(f"sparkmark pipeline {p.name}: running modules {ids}")
        summary = p.run(modules=ids)
        context.log.info(str(summary))
        bad = []
        for result in summary.results:
            key = keys[result.module_id]
            if result.run_id is not None:
                row = p.store.get_run(result.run_id)
            else:  # no run row could be opened (e.g. the module's lease was held)
                row = {"status": result.status, "error": result.error,
                       "module_name": result.module_name, "module_id": result.module_id}
            status = str(row.get("status"))
            if status in BAD_STATUSES:
                bad.append(f"{result.module_id} ({result.module_name}) {status}")
            check = _check_result(row, check_name, key)
            check_key = dg.AssetCheckKey(key, check_name)
            if status in BAD_STATUSES or (status == RunStatus.EMPTY.value and not materialize_empty):
                if check_key in chosen_checks:
                    yield check
                continue
            yield dg.MaterializeResult(
                asset_key=key, metadata=ledger_metadata(row),
                check_results=[check] if check_key in chosen_checks else [])
        if bad:
            raise dg.Failure(
                description=f"sparkmark pipeline {p.name} run {summary.run_id}: "
                            + "; ".join(bad),
                metadata={"pipeline_run_id": dg.MetadataValue.text(summary.run_id),
                          "modules": dg.MetadataValue.json(summary.rows)})

    return _pipeline_assets
