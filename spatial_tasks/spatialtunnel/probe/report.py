"""Probing part of ``spatial-tasks report``: for each probe folder, the metrics at the chosen
layer next to the paper's Table 5, and its figures redrawn from the saved deltas."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from spatial_tasks.common.formatting import number
from spatial_tasks.common.jsonfile import read_json_object
from spatial_tasks.common.samples import SamplesError
from spatial_tasks.spatialtunnel.probe.run import METRICS, recompute

LEGEND = [
    "- **Coh_H / Coh_V / Coh_D**: axis coherence, the mean pairwise cosine of the sign-corrected deltas "
    "h(swapped) − h(original) of the left/right, above/below and far/close questions (§5).",
    "- **VD-EI**: Eq. 3, ¼[cos(μ_above, μ_far) + cos(μ_below, μ_close) − cos(μ_above, μ_close) − "
    "cos(μ_below, μ_far)]; +1 when \"far\" is encoded as \"above\". **VD-EI (code)**: the authors' code's "
    "variant, cos of the mean sign-corrected vertical and distance deltas.",
    "- Coherences carry a 95 % percentile-bootstrap interval (each axis's pairs resampled, 1,000 times, seeded).",
    "- Paper, Table 5 (at the paper's layer): Qwen2.5-VL-3B .367 .293 .043 .457; Molmo-7B .143 .228 .075 .279; "
    "NVILA-Lite-2B .323 .289 .052 .539; RoboRefer .649 .830 .182 .362.",
]
KEYS = ("Coh_H", "Coh_V", "Coh_D", "VD-EI", "VD-EI (code)")


def probe_section(probes: list[Path], out: Path) -> tuple[list[Path], list[str]]:
    table = ["| probe | model | pairs | layer | " + " | ".join(KEYS) + " |", "|---|---|---:|---:|" + "---:|" * len(KEYS)]
    files: list[Path] = []
    reasons = []
    for folder in probes:
        summary = recompute(folder)
        reasons.append(f"- Layer of `{folder}`: {summary.why}.")
        m = summary.metrics
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(folder).resolve().name)
        at = m["at_layer"] or {}
        table.append(f"| {folder} | {m['model']} | {summary.done}/{summary.total} | "
                     f"{'none qualifies' if summary.layer is None else summary.layer} | "
                     + " | ".join(_with_interval(at.get(k), (m.get("intervals") or {}).get(k)) for k in KEYS) + " |")
        if m.get("zero_deltas"):
            reasons.append(f"- `{folder}`: {m['zero_deltas']} zero delta(s) (the swapped prompt gave the same hidden "
                           "state; cosine 0, as the authors' code).")
        if m["paper_table5"]:
            table.append(f"| paper, Table 5 | {m['model']} | | {summary.layer} | "
                         + " | ".join(number(m["paper_table5"].get(k), signed=True) for k in KEYS) + " |")
        for figure in summary.files:
            if figure.suffix == ".png":
                target = out / f"probe_{name}_{figure.name}"
                shutil.copyfile(figure, target)
                files.append(target)
    return files, [*table, "", *LEGEND, *reasons]


def _with_interval(value, interval) -> str:
    """A coherence with its 95 % interval where the probe computed one (older folders have none)."""
    if not interval:
        return number(value, signed=True)
    return f"{number(value, signed=True)} [{number(interval[0], signed=True)}, {number(interval[1], signed=True)}]"


PROBE_COLUMNS = {"coh_h": "Coh_H", "coh_v": "Coh_V", "coh_d": "Coh_D", "vd_ei": "VD-EI"}


def study_figures(root: Path) -> list[tuple[Path, str, str, str, dict]]:
    """Every ``spatial-tasks probe`` folder under ``root``: Table 5 at the layer its metrics.json
    reports. A metrics.json that cannot be read, or is not shaped as the probe writes it, is named."""
    out = []
    for metrics_file in sorted(Path(root).rglob(METRICS)):
        data = read_json_object(metrics_file, "a probe's metrics.json", SamplesError)
        at_layer, layer = data.get("at_layer"), data.get("layer")
        if not isinstance(data.get("model"), str) or not (layer is None or type(layer) is int) \
                or not (at_layer is None or isinstance(at_layer, dict)):
            raise SamplesError(f"{metrics_file}: not a probe's metrics.json (expected \"model\" text, \"layer\" a "
                               "number or null, \"at_layer\" an object or null); rerun `spatial-tasks probe` on its "
                               "folder to rewrite it")
        figures = {column: at_layer.get(key) for column, key in PROBE_COLUMNS.items()} if at_layer else {}
        bad = [column for column, value in figures.items() if value is not None and not _is_number(value)]
        if bad:
            raise SamplesError(f"{metrics_file}: at_layer: {', '.join(bad)} is not a number")
        out.append((metrics_file.parent, data["model"], "table5", f"probe, layer {layer}",
                    {column: figures.get(column) for column in PROBE_COLUMNS}))
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
