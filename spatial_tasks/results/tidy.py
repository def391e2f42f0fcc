"""lmms-eval runs -> tidy result records (``schema.ResultRecord``): every headline figure of every
task and group of every run, with its interval and the run's provenance. This is what the
scorecard, the leaderboard files and ``spatial-tasks results`` read."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from spatial_tasks.benchmark import ReleasedOutputs
from spatial_tasks.common.environment import data_read, software
from spatial_tasks.common.intervals import ITERATIONS, SEED
from spatial_tasks.common.runset import RunSet, Scope, TaskRun, run_software
from spatial_tasks.common.samples import LABEL_DROPS, Run
from spatial_tasks.registry import get
from spatial_tasks.results.schema import SOFTWARE_FIELDS, ResultRecord

Options = Mapping[str, Any]


def identity_args(model_args: object) -> str:
    """The model_args that identify a model -- placement, batching and credentials dropped
    (``LABEL_DROPS``), the rest sorted -- so one model run on other hardware matches itself."""
    if isinstance(model_args, dict):
        items = [f"{k}={v}" for k, v in model_args.items()]
    else:
        items = [a.strip() for a in str(model_args or "").split(",") if a.strip()]
    return ",".join(sorted(a for a in items if a.partition("=")[0].strip() not in LABEL_DROPS))


def task_figures(runs: RunSet, task: str, iterations: int = ITERATIONS, seed: int = SEED
                 ) -> dict[str, tuple[float, float, float]]:
    """Every scorecard figure (headlines and details) of ``task`` in the one lmms-eval run of ``runs``:
    (value, 95 % interval low, high), from its logged samples."""
    found = [t for t in runs.ours() if t.task == task]
    if len(found) != 1:
        raise FileNotFoundError(f"{runs.source}: {len(found)} samples files of {task}, expected one")
    intervals = runs.scope(found).intervals(iterations=iterations, seed=seed)
    return {metric: tuple(values[:3]) for metric, values in intervals.items()}


def run_records(runs: RunSet, run: Run, iterations: int = ITERATIONS, seed: int = SEED, options: Options = {}
                ) -> list[ResultRecord]:
    """The headline records of one run of ``runs``: per task, then per group (pooled subtasks, as
    lmms-eval reports groups), of every benchmark with a scorecard (other tasks are left out);
    ``options``: each benchmark takes the ones it knows (SpatialTunnel's ``protocol``)."""
    results = run.results()
    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    model = str(config.get("model") or run.folder.name)
    args = identity_args(config.get("model_args"))
    run_id = f"{run.stamp}:{model}:{hashlib.sha1(f'{model}|{args}'.encode()).hexdigest()[:8]}"
    per_task = {t.task: t for t in runs.of_run(run)
                if not t.empty and t.benchmark is not None and t.benchmark.scorecard is not None}
    scopes: dict[str, tuple[list[TaskRun], tuple[str, ...] | None]] = {
        task: ([t], t.declared) for task, t in sorted(per_task.items())}
    for group, subtasks in sorted((results.get("group_subtasks") or {}).items()):
        members = [per_task[t] for t in subtasks or () if t in per_task]
        if members and len(members) == len(subtasks) and len({m.benchmark_name for m in members}) == 1:
            names = {n for m in members for n in (m.declared or ())}
            scopes[group] = (members, tuple(sorted(names)) if names else None)
    out = []
    for task, (members, names) in scopes.items():
        out += _task_records(runs.scope(members, **options), names, task,
                             _provenance(results, task, model, args, run_id), iterations, seed)
    return out


def _task_records(scope: Scope, names: tuple[str, ...] | None, task: str, meta: dict, iterations: int,
                  seed: int) -> list[ResultRecord]:
    spec, rows = scope.benchmark, scope.records
    card = spec.scorecard
    if card is None or not card.applies(rows):
        return []
    # not every task defines every figure (e.g. SDGM language on the real-image task)
    chosen = [h for h in card.headlines if names is None or h.metric in names]
    found = scope.intervals(chosen, iterations, seed)
    settings = spec.settings(rows) if spec.settings is not None else {}
    out = []
    for headline in chosen:
        value, low, high, method = found[headline.metric]
        out.append(ResultRecord(benchmark=spec.name, task=task, metric=headline.metric,
                                value=_finite(value), n=len(rows), ci_low=_finite(low), ci_high=_finite(high),
                                ci_method=method if _finite(low) is not None else "none",
                                headline=bool(headline.scope(rows)), settings=settings, **meta))
    return out


def _finite(value: float) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _data_source(config: dict) -> tuple[str | None, str | None]:
    """(dataset_path -- or "<builder>:<local files>" for local data -- and revision) of one task config:
    the data the run recorded it read (``DATA_KEY``: after a source override), else the config's."""
    read = data_read(config) or {"kwargs": {}, "path": None}
    kwargs, source = read["kwargs"], read["path"]
    files = kwargs.get("data_files")
    if source in ("parquet", "json", "csv", "arrow") and files:
        source = f"{source}:{';'.join(sorted(str(f) for f in (files.values() if isinstance(files, dict) else [files])))}"
    revision = kwargs.get("revision") or config.get("revision")
    return (None if source is None else str(source)), (None if revision is None else str(revision))


def software_fields(env: dict) -> dict:
    """A recorded software dict (``common.environment.software``) as record fields."""
    return {field: env.get(key) for key, field in SOFTWARE_FIELDS.items()}


def scored_with() -> str:
    """This spatial-tasks, which computes the figures: "VERSION (COMMIT)"."""
    env = software()
    return f"{env['spatial_tasks'] or '?'} ({env['spatial_tasks_commit'] or 'no git checkout'})"


def _provenance(results: dict, task: str, model: str, args: str, run_id: str) -> dict:
    configs = results.get("configs") or {}
    members = [task] if task in configs else list((results.get("group_subtasks") or {}).get(task) or ())
    sources = [_data_source(configs.get(t) or {}) for t in members]  # a group: its subtasks' sources
    joined = [" | ".join(sorted({s[i] for s in sources if s[i]})) or None for i in (0, 1)]
    version = (results.get("versions") or {}).get(task)
    env = next((e for e in (run_software(configs.get(t) or {}) for t in members) if e), {})
    fields = software_fields(env)
    if not fields["lmms_eval_version"]:  # an older run: lmms-eval's own "branch@commit", if it says anything
        recorded = str(results.get("lmms_eval_version") or "")
        fields["lmms_eval_version"] = recorded if recorded and recorded != "unknown@unknown" else None
    return {"model": model, "model_args": args, "run_id": run_id, **fields, "scored_with": scored_with(),
            "task_version": None if version is None else str(version),
            "data_source": joined[0], "data_revision": joined[1]}


def collect(runs: RunSet, iterations: int = ITERATIONS, seed: int = SEED, options: Options = {}
            ) -> list[ResultRecord]:
    """Every run's headline records, in a stable order."""
    return [record for run in runs.runs for record in run_records(runs, run, iterations, seed, options)]


def outside_records(benchmark: str, rows: list[dict], run_id: str, data_source: str,
                    iterations: int = ITERATIONS, seed: int = SEED) -> list[dict]:
    """Headline records of per-question records that come from outside an lmms-eval run (O3-D's
    released outputs), per model (each row's ``model``) and per scope (``ReleasedOutputs.scopes``; each
    figure in its own scope only), as JSON-ready dicts. Nothing to resample by scene: the release
    names none, so only proportions get an interval. No model_args, run software or revision."""
    spec = get(benchmark)
    by_model: dict[str, list[dict]] = {}
    for row in rows:
        by_model.setdefault(str(row.get("model")), []).append(row)
    out = []
    for model, model_rows in sorted(by_model.items()):
        release = spec.offers(ReleasedOutputs)
        scopes = release.scopes(model_rows) if release is not None else {"released": model_rows}
        meta = {"model": model, "model_args": "", "run_id": f"{run_id}:{model}", "task_version": None,
                "scored_with": scored_with(), "data_source": data_source, "data_revision": None}
        for task, scope in scopes.items():
            out += [r.model_dump(mode="json") for r in _task_records(Scope(spec, scope), None, task, meta, iterations,
                                                                     seed) if r.headline]
    return out


def benchmark_records(runs: RunSet, benchmark: str, options: Options = {}) -> list[dict]:
    """What ``rescore --json`` adds under "records": the tidy records of one benchmark's runs, as
    JSON-ready dicts in the documented schema (``record.schema.json``)."""
    return [r.model_dump(mode="json") for r in collect(runs.only(benchmark), options=options)]
