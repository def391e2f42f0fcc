"""The figures every aggregating layer gives, as one JSON document: ``rescore`` of each benchmark,
the tidy ``results`` records, ``verify`` and the report's tables and ``leaderboard.json`` -- on real
lmms-eval runs of the baseline over every bundled sample (runs relabelled as paper models, so
``verify`` has cells to grade) and on the O3-D authors' released outputs.

``tests/test_golden_figures.py`` compares them with ``tests/golden/figures.json``, written before
the benchmarks became one unit each (issue 30), so a refactor of the shared layers cannot move a
figure. What a run cannot reproduce (timestamps, paths, the software that ran it) is left out.

Regenerate (only when a figure is meant to change, saying why in the commit)::

    .venv/bin/python tests/golden_figures.py write
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "figures.json"
RELEASED = HERE / "o3d" / "data" / "released_outputs_5models.jsonl.gz"

# (folder, rule, tasks, the paper model the run is relabelled as): each benchmark's sample tasks
# under a rule whose answers give non-trivial figures.
RUNS = (
    ("spatialtunnel", "vertical", "spatialtunnel_sample,spatialtunnel_logit_sample", "Qwen/Qwen2.5-VL-3B-Instruct"),
    ("o3d", "always_near", "o3d_sample,o3d_sample_real", "OpenGVLab/InternVL2_5-4B"),
    ("dori", "always_a", "dori_sample", "liuhaotian/llava-v1.6-vicuna-13b"),
    ("vague", "oracle", "vague_sample_lm,vague_sample_sm,vague_sample_vlm,vague_sample_freeform",
     "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("resplit", "vertical", "spatialtunnel_embspatial_depth_split_sample,spatialtunnel_cv_bench_3d_split_sample",
     "Qwen2.5-VL-3B"),  # the paper's alias: a label apart from the SpatialTunnel run's
)
# Fields of a result record that say who ran it where, not what it measured; and (issue 30) the
# version and settings fields added after the golden file was written -- records, not figures.
VOLATILE = {"run_id", "scored_with", "lmms_eval_version", "python_version", "torch_version", "transformers_version",
            "vllm_version", "datasets_version", "spatial_tasks_version", "spatial_tasks_commit", "lock_hash", "data_source",
            "data_revision", "bertscore_model", "bertscore_revision", "bertscore_layers", "schema_version", "settings"}


def make_runs(root: Path, baseline_run=None) -> Path:
    """The baseline runs (``RUNS``) under ``root``, each results file relabelled as its paper model.
    ``baseline_run(rule, tasks, env)`` (the tests' shared runs, conftest.py) makes a run; its folder
    is copied, never changed. Without it, each run is made here."""
    import shutil

    sys.path.insert(0, str(HERE))
    from lmms import run_lmms_eval

    from spatial_tasks.demo import offline_bertscore

    root.mkdir(parents=True, exist_ok=True)
    for folder, rule, tasks, paper_model in RUNS:
        env = offline_bertscore() if folder == "vague" else None  # only VAGUE scores BERTScore
        if baseline_run is None:
            run = run_lmms_eval(root / folder, "spatial_baseline", f"rule={rule}", tasks, env=env)
        else:
            run = baseline_run(rule, tasks, env)
            shutil.copytree(run.out, root / folder)
        assert run.results is not None, run.output[-3000:]
        for results_file in (root / folder).rglob("*_results.json"):
            data = json.loads(results_file.read_text())
            data["config"]["model_args"] = f"pretrained={paper_model},rule={rule}"
            results_file.write_text(json.dumps(data))
    return root


def _clean(value: object) -> object:
    """Floats rounded to 10 decimals (NaN as None), so the comparison is about figures, not noise."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, 10)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _record(record: dict) -> dict:
    return {k: v for k, v in _clean(record).items()}


def figures(root: Path, report_dir: Path) -> dict:
    """Every figure of the runs under ``root`` and of the released O3-D outputs (module docstring)."""
    import os

    from spatial_tasks.demo import offline_bertscore

    os.environ.update(offline_bertscore())  # VAGUE's BERTScore, offline, as in the runs
    from spatial_tasks.dori.rescore import rescore as dori_rescore
    from spatial_tasks.o3d.rescore import records_from_released, rescore_released, rescore_samples
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report
    from spatial_tasks.results.tidy import collect
    from spatial_tasks.results.verify import verify
    from spatial_tasks.spatialtunnel.rescore import rescore as st_rescore
    from spatial_tasks.vague.rescore import rescore as vague_rescore

    out: dict = {"rescore": {}}
    runs = read_runs(root / "spatialtunnel", root / "o3d", root / "dori", root / "vague")  # read once, as a command does
    # Each task under its logged protocol (issue 32: naming another protocol than a run's is refused).
    out["rescore"]["spatialtunnel"] = {"auto": _clean(st_rescore(runs.within(root / "spatialtunnel"), "auto")["runs"])}
    out["rescore"]["o3d"] = _clean(rescore_samples(runs.within(root / "o3d"), 0)["models"])
    out["rescore"]["o3d_ddof1"] = _clean(rescore_samples(runs.within(root / "o3d"), 1)["models"])
    dori = dori_rescore(runs.within(root / "dori"), 0)
    out["rescore"]["dori"] = _clean({"runs": dori["runs"], "seeds": dori["seeds"]})
    out["rescore"]["vague"] = _clean(vague_rescore(runs.within(root / "vague"))["runs"])
    released = records_from_released(RELEASED)  # the release parsed once, for both ddofs
    out["rescore"]["o3d_released"] = _clean(rescore_released(RELEASED, 0, released)["models"])
    out["rescore"]["o3d_released_ddof1"] = _clean(rescore_released(RELEASED, 1, released)["models"])
    whole = read_runs(root)
    out["results"] = sorted((_record(r.model_dump(mode="json")) for r in collect(whole, iterations=200)),
                            key=lambda r: json.dumps(r, sort_keys=True))
    result = verify(whole, released=[RELEASED])
    for cell in result["cells"]:
        cell.pop("source")
    out["verify"] = _clean({k: v for k, v in result.items() if k not in ("software", "software_warning")})
    write_report(whole, report_dir)
    board = json.loads((report_dir / "leaderboard.json").read_text())
    out["leaderboard"] = sorted((_record(r) for r in board["records"]), key=lambda r: json.dumps(r, sort_keys=True))
    out["report_tables"] = report_tables((report_dir / "report.md").read_text())
    return out


def report_tables(text: str) -> dict[str, list[str]]:
    """The table rows of each section of report.md (the Software section says who ran it, and the
    Scoring settings section -- added by issue 30 -- how: both left out)."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        elif line.startswith("|") and current not in ("Software", "Scoring settings"):
            sections.setdefault(current, []).append(line)
    return sections


def main() -> None:
    if sys.argv[1:2] != ["write"]:
        raise SystemExit("usage: python tests/golden_figures.py write [RUNS_FOLDER made earlier]")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(sys.argv[2]) if len(sys.argv) > 2 else make_runs(Path(tmp) / "runs")
        GOLDEN.write_text(json.dumps(figures(root, Path(tmp) / "report"), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
