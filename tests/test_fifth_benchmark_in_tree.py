"""A fifth benchmark inside the tree is one folder per root plus one registry line (issue 45).

A copy of this repository gets ToyBench's three folders (tests/toybench_in_tree/: spatial_tasks/toybench,
tasks/toybench, generators/toybench, with the record, metric and rules of tests/toybench) and one line
in spatial_tasks/registry.py -- nothing else. Its wheel is built and installed in a fresh environment,
and there a live lmms-eval run, list, benchmarks, prompts, preview, rescore, results, report, verify and
inspect all handle the new benchmark."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).parent
OVERLAY = HERE / "toybench_in_tree"
SHARED = HERE / "toybench" / "toybench"  # the out-of-tree ToyBench: its record, metric and rules
ROOTS = ("spatial_tasks", "tasks", "generators")
REGISTRY_LINE = '    "spatial_tasks.toybench.benchmark",\n'
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
pytestmark = pytest.mark.cli

# Every command in one process of the fresh environment (each start costs seconds): argv -> output.
DRIVER = """
import json, sys
from typer.testing import CliRunner
from spatial_tasks.cli import app
out = {}
for argv in json.loads(sys.argv[1]):
    result = CliRunner().invoke(app, argv)
    out[" ".join(argv[:2])] = {"code": result.exit_code, "output": result.stdout,
                               "error": repr(result.exception) if result.exit_code else None}
import spatial_tasks
out["module"] = spatial_tasks.__file__
print(json.dumps(out))
"""


def _tree(base: Path) -> Path:
    """The repository's three roots and build files, copied, with ToyBench's folders and registry line added."""
    tree = base / "tree"
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "_work", ".report-*")
    for root in ROOTS:
        shutil.copytree(ROOT / root, tree / root, ignore=junk)
    for name in ("setup.py", "pyproject.toml", "README.md", "requirements.lock"):
        shutil.copy2(ROOT / name, tree / name)
    before = {p.relative_to(tree) for p in tree.rglob("*")}
    registry = tree / "spatial_tasks" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    registry.write_text(text.replace("MODULES = (\n", "MODULES = (\n" + REGISTRY_LINE, 1), encoding="utf-8")
    for root in ROOTS:
        shutil.copytree(OVERLAY / root / "toybench", tree / root / "toybench", ignore=junk)
    for name in ("core.py", "baselines.py"):
        shutil.copy2(SHARED / name, tree / "spatial_tasks" / "toybench" / name)
    for name in ("toybench_sample.yaml", "paper_results.yaml"):
        shutil.copy2(SHARED / "tasks" / name, tree / "tasks" / "toybench" / name)
    # the generator writes the sample, as a benchmark's generator would (before the wheel is built)
    subprocess.run([sys.executable, str(tree / "generators" / "toybench" / "squares.py"), str(tree / "tasks" / "toybench")],
                   check=True, capture_output=True, text=True, env={**OFFLINE, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"})
    added = {p.relative_to(tree) for p in tree.rglob("*")} - before
    assert {p.parts[:2] for p in added} == {(root, "toybench") for root in ROOTS}, sorted(map(str, added))
    assert registry.read_text(encoding="utf-8").splitlines() == \
        text.replace("MODULES = (\n", "MODULES = (\n" + REGISTRY_LINE).splitlines()  # one line, nothing else
    return tree


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("in_tree")
    tree = _tree(base)
    dist = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(tree)], check=True, capture_output=True, text=True)
    wheel = next(dist.glob("spatial_tasks-*.whl"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # pip: from deps.pth
    py = venv / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # the dependencies, not the checkout
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)

    runs = base / "runs"
    live = subprocess.run([py, "-m", "lmms_eval", "--model", "spatial_baseline", "--model_args", "rule=always_yes",
                           "--tasks", "toybench_sample", "--output_path", str(runs), "--log_samples"],
                          capture_output=True, text=True, cwd=base, env=OFFLINE, timeout=600)
    results = list(runs.rglob("*_results.json"))
    assert len(results) == 1, live.stdout[-3000:] + live.stderr[-3000:]
    data = json.loads(results[0].read_text())
    data["config"]["model_args"] = "pretrained=toy/ToyVLM,rule=always_yes"  # the paper's toy model
    results[0].write_text(json.dumps(data))

    sample = tree / "tasks" / "toybench" / "sample"
    commands = [["list"], ["benchmarks"], ["prompts", "toybench"],
                ["preview", "toybench", str(sample), "--out", str(base / "sheet.png")],
                ["rescore", "toybench", str(runs), "--json"], ["results", str(runs), "--out", str(base / "results")],
                ["report", str(runs), "--out", str(base / "report")], ["verify", str(runs), "--json"],
                ["inspect", str(sample), "--json"]]
    driven = subprocess.run([py, "-c", DRIVER, json.dumps(commands)], capture_output=True, text=True, cwd=base,
                            env=OFFLINE, timeout=600)
    assert driven.returncode == 0, driven.stderr[-3000:]
    out = json.loads(driven.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in out.items() if k != "module" and v["code"] != 0}
    assert not failed, failed
    return {"base": base, "site": site, "wheel": wheel, "results": data, "out": out}


def test_the_wheel_holds_its_three_folders_and_is_what_runs(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for member in ("spatial_tasks/toybench/benchmark.py", "spatial_tasks/toybench/commands.py",
                   "spatial_tasks/tasks/toybench/toybench_sample.yaml", "spatial_tasks/tasks/toybench/utils.py",
                   "spatial_tasks/tasks/toybench/sample/test-00000-of-00001.parquet",
                   "spatial_tasks/generators/toybench/squares.py"):
        assert member in names, member
    assert installed["out"]["module"].startswith(str(installed["site"]))  # the installed copy, not a checkout


def test_a_live_lmms_eval_run_scores_it(installed):
    assert installed["results"]["results"]["toybench_sample"]["acc,none"] == 0.5  # always Yes, alternating answers


def test_list_benchmarks_prompts_and_preview(installed):
    out = installed["out"]
    assert any(line.split()[:2] == ["toybench_sample", "task"] for line in out["list"]["output"].splitlines())
    assert any(line.split()[:2] == ["toybench", "ToyBench"] for line in out["benchmarks"]["output"].splitlines())
    prompts = [json.loads(line) for line in out["prompts toybench"]["output"].splitlines()]
    assert prompts == [{"task": "toybench_sample", "id": "toy-0", "prompt": "Is square 0 red? Answer Yes or No."}]
    sheet = installed["base"] / "sheet.png"
    assert sheet.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out["preview toybench"]["output"].strip() == str(sheet)


def test_rescore_results_report_verify_and_inspect(installed):
    out, base = installed["out"], installed["base"]
    rescored = json.loads(out["rescore toybench"]["output"])
    assert list(rescored["runs"].values()) == [{"toybench_sample": {"acc": 0.5, "n": 6}}]
    (record,) = [json.loads(line) for line in (base / "results" / "results.jsonl").read_text().splitlines()]
    assert (record["benchmark"], record["task"], record["value"], record["n"]) == ("toybench", "toybench_sample", 0.5, 6)
    text = (base / "report" / "report.md").read_text()
    assert "| model | ToyBench acc |" in text and "| toybench_sample | 6 | 0.500 |" in text[text.index("## ToyBench"):]
    verified = json.loads(out[f"verify {base / 'runs'}"]["output"])
    assert verified["passed"] and [(c["paper_model"], c["table"], c["column"], c["grade"]) for c in verified["cells"]] \
        == [("ToyVLM", "table1", "acc", "strong")]
    inspected = json.loads(out[f"inspect {base / 'tree' / 'tasks' / 'toybench' / 'sample'}"]["output"])
    assert [split["readers"]["toybench"] for split in inspected["splits"]] == ["accepted: ToyBench questions"]
