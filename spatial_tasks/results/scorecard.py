"""The scorecard: one row per model (matched by model and identity model_args, never by folder),
each benchmark's headline figures side by side with their 95 % intervals; and the leaderboard
file, which holds exactly the scorecard's records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from spatial_tasks.common.environment import mixed_warning, software
from spatial_tasks.common.formatting import number
from spatial_tasks.registry import benchmarks
from spatial_tasks.results.schema import (
    SCHEMA_VERSION,
    SOFTWARE_FIELDS,
    ResultRecord,
    merge_with_files,
    write_csv,
)

LEADERBOARD_JSON, LEADERBOARD_CSV = "leaderboard.json", "leaderboard.csv"


def headline_records(records: Sequence[ResultRecord]) -> list[ResultRecord]:
    """Per (model, model_args, benchmark, metric, scoring settings): the record the scorecard shows --
    among the records of a headline scope (``ResultRecord.headline``), the one over the most questions
    (the whole benchmark when a group pools its subtasks), of the latest run; ties: the shorter task
    name. Figures scored under other settings (SpatialTunnel's two protocols) are other figures: each
    is kept."""
    def rank(r: ResultRecord) -> tuple:
        return r.n, r.run_id, -len(r.task), r.task

    best: dict[tuple, ResultRecord] = {}
    for r in records:
        key = (r.model, r.model_args, r.benchmark, r.metric, tuple(sorted(r.settings.items())))
        if r.headline and (key not in best or rank(r) > rank(best[key])):
            best[key] = r
    return list(best.values())


def _value(record: ResultRecord) -> str:
    if record.ci_low is None or record.ci_high is None:
        return number(record.value)
    return f"{number(record.value)} [{number(record.ci_low)}, {number(record.ci_high)}]"


def _cell(records: Sequence[ResultRecord], options: Sequence[str]) -> str:
    """One model's figure(s) in one column. Each is labelled by its scoring options (the benchmark's
    ``options`` among its settings: SpatialTunnel's protocol) and by any setting in which the
    figures of this cell differ (two DORI option-order seeds); several are joined by "; "."""
    if not records:
        return "–"
    differing = {k for r in records for k in r.settings if len({str(o.settings.get(k)) for o in records}) > 1}
    shown = sorted({k for r in records for k in r.settings if k in options} | differing)

    def label(r: ResultRecord) -> str:
        parts = [r.settings[k] if k in options else f"{k} {r.settings[k]}" for k in shown if k in r.settings]
        return f" ({', '.join(parts)})" if parts else ""

    return "; ".join(_value(r) + label(r) for r in sorted(records, key=lambda r: sorted(r.settings.items())))


def scorecard_columns(present: set[str]) -> list[tuple[str, str, str]]:
    """(benchmark, metric, heading) of the scorecard's columns: every headline of each benchmark in
    ``present``, in registry order (the report's table and the page's share them)."""
    return [(name, h.metric, f"{b.title} {h.label}") for name, b in benchmarks().items()
            if b.scorecard is not None and name in present for h in b.scorecard.headlines]


def scorecard_lines(records: Sequence[ResultRecord]) -> list[str]:
    """A markdown table (and its legend) of ``headline_records(records)``."""
    chosen = headline_records(records)
    if not chosen:
        return []
    specs = {name: b for name, b in benchmarks().items() if b.scorecard is not None}
    shown = scorecard_columns({r.benchmark for r in chosen})
    models = sorted({(r.model, r.model_args) for r in chosen})
    by_key: dict[tuple, list[ResultRecord]] = {}
    for r in chosen:
        by_key.setdefault((r.model, r.model_args, r.benchmark, r.metric), []).append(r)
    head = ["model", *(title for _, _, title in shown)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for model, args in models:
        name = f"`{model}({args})`" if args else f"`{model}`"
        cells = [_cell(by_key.get((model, args, b, m), []), specs[b].options) for b, m, _ in shown]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    scopes = sorted({(r.benchmark, r.task, r.n) for r in chosen})
    warning = mixed_warning([record_software(r) for r in chosen], "rows of this scorecard")
    lines += [*(["", f"**{warning}**"] if warning else []), "", "Value [95 % interval]: Wilson for plain accuracies, a seeded cluster bootstrap over images / "
              "scenes / items otherwise (paired items resampled together; `spatial_tasks/common/intervals.py`). "
              "Each figure comes from the largest task or group that defines it (SpatialTunnel: v and Δ over the "
              "phase variant, as the papers' Tables 3 and 8, v and Δ_s over the size variant, as Table 9, each "
              "protocol its own figure; O3-D: accuracy, bias and SDGM vision over the marked images, as Table 12, "
              "SDGM language over the question variations at the three clarity levels >= 3 (Eq. 2's 42 "
              "groups); VAGUE: the VLM setting): "
              + "; ".join(f"{specs[b].title} `{t}` (n = {n})" for b, t, n in scopes) + "."]
    return lines


def record_software(record: ResultRecord) -> dict[str, str | None]:
    """A record's run software, keyed as ``common.environment.software()`` keys it."""
    return {key: getattr(record, field) for key, field in SOFTWARE_FIELDS.items()}


def write_leaderboard(records: Sequence[ResultRecord], out: Path, previous: Path | None = None) -> list[Path]:
    """``leaderboard.json`` and ``leaderboard.csv`` in ``out``: the scorecard's records merged into
    those of the leaderboard in the folder ``previous`` (its .json and its .csv, whichever exist;
    same key -> replaced, so nothing doubles). An earlier leaderboard that cannot be read stops
    here, naming it, before anything is written."""
    # The .json last: where both hold a key, its record (exact floats) is the one kept.
    files = [previous / LEADERBOARD_CSV, previous / LEADERBOARD_JSON] if previous is not None else []
    rows = merge_with_files(headline_records(records), files)
    document = {"schema_version": SCHEMA_VERSION, "schema": "spatial_tasks/results/record.schema.json",
                "key": ["model", "model_args", "benchmark", "task", "metric", "run_id"],
                "written_with": software(),  # each record names its own run's software
                "records": [r.model_dump() for r in rows]}
    json_path = out / LEADERBOARD_JSON
    json_path.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return [json_path, write_csv(rows, out / LEADERBOARD_CSV)]
