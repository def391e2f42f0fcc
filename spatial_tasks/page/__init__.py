"""The report page: ``index.html`` beside ``report.md``, one self-contained view of a report.

It shows what the report holds and one thing it does not: the scorecard (sortable, each figure with
its interval, n and protocol; exactly ``leaderboard.json``'s records), the papers' cells beside
ours with ``verify``'s grade, each run's software and scoring settings, every figure with its
caption in the report's order, and a browser over every logged sample with its images
(``samples``, ``images``): filters on the benchmark's own fields, wrong-only and free text, and two
runs side by side with the questions they disagree on first.

The page is only a view: its data is the leaderboard and the logged samples, embedded as one JSON
block that the page's own script (``assets/page.js``, written for this page, no library) renders
as text nodes -- nothing from a sample is ever parsed as HTML. Opened from disk it fetches nothing:
the script and style are inline, images are the report's PNGs and the ``thumbs/`` folder beside it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import Run
from spatial_tasks.page.images import THUMBS, ImageShelf
from spatial_tasks.page.samples import RowJSON, Strings, benchmark_rows

PAGE = "index.html"


def _asset(name: str) -> str:
    return resources.files("spatial_tasks.page").joinpath("assets", name).read_text(encoding="utf-8")


def _plain(line: str) -> str:
    """A markdown line of the report as plain text (the page shows it as text, never as HTML)."""
    return re.sub(r"\*\*|`", "", line).strip()


def _figure_caption(path: Path) -> str:
    """The caption a figure carries in its PNG text (``common.plots.save``), else its file name."""
    from PIL import Image

    from spatial_tasks.common.plots import CAPTION_KEY

    try:
        with Image.open(path) as image:
            caption = image.info.get(CAPTION_KEY) or getattr(image, "text", {}).get(CAPTION_KEY)
    except OSError:
        caption = None
    return caption or path.stem.replace("_", " ")


def scorecard(records: Sequence[Mapping]) -> dict:
    """The leaderboard's records as the page's table: one row per (model, model_args), the report's
    scorecard columns (``scorecard_columns``, then any other metric a record has), each cell every
    record of it."""
    from spatial_tasks.registry import benchmarks
    from spatial_tasks.results.scorecard import scorecard_columns

    specs = benchmarks()
    headed = scorecard_columns({r["benchmark"] for r in records})
    others = sorted({(r["benchmark"], r["metric"]) for r in records} - {(b, m) for b, m, _ in headed})
    columns = [{"key": f"{b}/{m}", "benchmark": b, "metric": m, "title": title} for b, m, title in headed] + [
        {"key": f"{b}/{m}", "benchmark": b, "metric": m, "title": f"{specs[b].title if b in specs else b} {m}"}
        for b, m in others]
    rows: dict[tuple[str, str], dict] = {}
    for index, r in enumerate(records):
        row = rows.setdefault((r["model"], r["model_args"] or ""), {"model": r["model"], "model_args": r["model_args"] or "",
                                                                   "cells": {}})
        settings = r.get("settings") or {}
        row["cells"].setdefault(f"{r['benchmark']}/{r['metric']}", []).append({
            "record": index, "value": r["value"], "low": r.get("ci_low"), "high": r.get("ci_high"), "n": r["n"],
            "method": r.get("ci_method"), "protocol": settings.get("protocol", "exact"), "task": r["task"],
            "settings": {k: v for k, v in settings.items() if k != "protocol"}, "run_id": r["run_id"]})
    return {"columns": columns, "rows": sorted(rows.values(), key=lambda row: (row["model"], row["model_args"]))}


def page_data(*, intro: Sequence[str], source: str, leaderboard: Sequence[Mapping], papers: Sequence,
              runs: RunSet | None, versions: Sequence[tuple[str, Mapping]], settings: Sequence[tuple[str, str, Mapping]],
              figures: Sequence[tuple[str, Sequence[Path]]], shelf: ImageShelf, view: Mapping | None = None) -> dict:
    """Everything the page shows, as one JSON-able dict. ``view`` is what the sample browser opens on:
    ``{"runs": (folder name of run A, of run B), "benchmark": name, "first": (field, value)}`` -- two runs
    side by side on one benchmark, the questions whose field has that value first (then those the two
    disagree on); a run it names that is not there leaves the browser as it opens by default."""
    strings = Strings()
    listed: Sequence[Run] = runs.runs if runs is not None else []
    run_index = {run.label: i for i, run in enumerate(listed)}
    configs = {(run.label, task): config for run in listed
               for task, config in (run.results().get("configs") or {}).items() if isinstance(config, dict)}
    samples: list[dict] = []
    browsed = []
    for name, part in (runs.by_benchmark() if runs is not None else {}).items():  # registry order, as the report
        benchmark = runs.known[name]
        rows, fields = benchmark_rows(benchmark, part, run_index, strings, shelf, configs, browsed=len(browsed))
        samples += rows
        browsed.append({"name": name, "title": benchmark.title, "fields": fields})
    return {
        "title": "spatial-tasks report", "intro": [_plain(line) for line in intro if line.strip()], "source": _plain(source),
        "scorecard": scorecard(leaderboard),
        "papers": [{"model": Path(c.model).name, "paper_model": c.paper_model, "benchmark": c.benchmark, "table": c.table,
                    "column": c.column, "scope": c.scope, "ours": c.ours, "paper": c.paper, "delta": c.delta_points,
                    "grade": c.grade} for c in papers],
        "versions": [{"run": label, **env} for label, env in versions],
        "settings": [{"run": label, "benchmark": title, "settings": dict(found)} for label, title, found in settings],
        "sections": [{"title": title, "figures": [{"src": p.name, "caption": _figure_caption(p)} for p in files]}
                     for title, files in figures if files],
        "runs": [{"label": run.label, "folder": str(run.folder), "stamp": run.stamp} for run in listed],
        "benchmarks": browsed, "strings": strings.table, "samples": samples, "thumbs": THUMBS,
        "view": _view(view, listed, [b["name"] for b in browsed]),
        "image_problems": dict(sorted(shelf.problems.items())),
    }


def _view(view: Mapping | None, runs: Sequence[Run], browsed: Sequence[str]) -> dict | None:
    if not view:
        return None
    # a run is named by its --output_path folder; lmms-eval writes below it, in a folder of the model's
    def index(name: str) -> int | None:
        return next((i for i, run in enumerate(runs) if name in Path(run.folder).parts), None)

    a, b = (index(name) for name in view["runs"])
    if a is None or b is None or view.get("benchmark") not in browsed:
        return None
    return {"a": a, "b": b, "bench": browsed.index(view["benchmark"]), "first": list(view.get("first") or ())}


def _finite(value):
    """``value`` with every NaN or infinity (a figure undefined for its rows) as None: JSON has none."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def script_safe_json(value: object) -> str:
    """``value`` as JSON safe inside a <script> element: NaN and infinities as null, and no "<", ">"
    or "&" survives as itself (escaped within strings: the same JSON value)."""
    text = json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_ROWS = "\x00sample rows\x00"  # stands for the encoded rows while the rest is encoded


def embed(data: dict) -> str:
    """``data`` as JSON safe inside a <script> element (``script_safe_json``); its sample rows come
    encoded already (``samples.RowJSON``) and are spliced in as they are."""
    if "samples" not in data:
        return script_safe_json(data)
    rows = data["samples"] or []
    text = script_safe_json({**data, "samples": _ROWS})
    placeholder = json.dumps(_ROWS)
    if text.count(placeholder) != 1:  # the marker must stand once, where the rows go
        raise RuntimeError("page data: the sample rows' marker is not where the rows go")
    head, _, tail = text.partition(placeholder)
    return "".join([head, "[", ",".join(row if isinstance(row, RowJSON) else script_safe_json(row) for row in rows),
                    "]", tail])


def render(data: dict) -> str:
    """The page's HTML: the template with its style, script and data inline."""
    html = _asset("page.html")
    for marker, value in (("/*STYLE*/", _asset("page.css")), ("/*SCRIPT*/", _asset("page.js")), ("/*DATA*/", embed(data))):
        if html.count(marker) != 1:
            raise RuntimeError(f"page.html: expected one {marker} marker")
        head, _, tail = html.partition(marker)
        html = head + value + tail
    return html


def write_page(out: Path, **parts) -> list[Path]:
    """Write ``index.html`` (and ``thumbs/`` when a sample has an image) into ``out``; the files written."""
    out = Path(out)
    shelf = ImageShelf(out)
    data = page_data(shelf=shelf, **parts)
    if shelf.problems:  # the page says it on every such sample; the terminal once
        (task, why), more = next(iter(sorted(shelf.problems.items()))), len(shelf.problems) - 1
        print(f"spatial-tasks: report page: the images of {task} could not be read ({why})"
              + (f"; {more} more task(s) likewise, listed on the page" if more else ""), file=sys.stderr)
    index = out / PAGE
    index.write_text(render(data), encoding="utf-8")
    return [index, *([shelf.folder] if shelf.written else [])]
