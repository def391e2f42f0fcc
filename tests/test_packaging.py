"""The built wheel carries every task file, and an installed copy (not the checkout) is what
lmms-eval finds through our entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """(the wheel, everything the build printed)."""
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                          "-w", str(out), str(ROOT)], check=True, capture_output=True, text=True)
    return next(out.glob("spatial_tasks-*.whl")), run.stdout + run.stderr


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


def test_the_build_prints_no_setuptools_warning(built):
    """Package data is declared so setuptools has nothing to warn about (an install stays quiet)."""
    log = built[1]
    for warning in ("BuildBackendWarning", "SetuptoolsDeprecationWarning", "is absent from the `packages`"):
        assert warning not in log, log[log.find(warning) - 500: log.find(warning) + 300]


def _checkout_files(folder: str, patterns: tuple[str, ...]) -> set[str]:
    base = ROOT / folder
    return {str(p.relative_to(base)) for pat in patterns for p in base.rglob(pat)
            if "__pycache__" not in p.parts and "_work" not in p.parts}


def test_wheel_carries_every_task_file_and_generator_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tasks = _checkout_files("tasks", ("*.yaml", "_*_yaml", "*.jinja", "*.py", "*.parquet", "*.md"))
    assert tasks, "no task files found in the checkout"
    missing = sorted(t for t in tasks if f"spatial_tasks/tasks/{t}" not in names)
    assert not missing, f"task files missing from the wheel: {missing}"
    generators = _checkout_files("generators", ("*.py", "*.jinja", "*.md"))
    missing = sorted(g for g in generators if f"spatial_tasks/generators/{g}" not in names)
    assert not missing, f"generator files missing from the wheel: {missing}"
    library = _checkout_files("spatial_tasks", ("*.py",))
    missing = sorted(m for m in library if f"spatial_tasks/{m}" not in names)
    assert not missing, f"modules missing from the wheel: {missing}"
    # every benchmark's known-behaviour checkpoints (weights, processor files, card, loss curve)
    known = [f.relative_to(ROOT).as_posix() for f in sorted((ROOT / "spatial_tasks").glob("*/known_models/checkpoints/*/*"))
             if f.is_file()]
    missing = sorted(k for k in known if k not in names)
    assert len(known) >= 3 * 10 and not missing, f"known-model checkpoint files missing from the wheel: {missing}"


def test_bundled_sample_data_is_small(wheel):
    info = zipfile.ZipFile(wheel).infolist()
    sample_bytes = sum(i.file_size for i in info if "/sample/" in i.filename)
    assert 0 < sample_bytes <= 5 * 1024 * 1024


def test_installed_wheel_is_what_lmms_eval_finds(wheel, tmp_path):
    venv = tmp_path / "fresh"
    # --without-pip: the test environment's pip (reached through deps.pth below) installs the wheel; the
    # venv's own copy of pip (ensurepip, ~4 s) would install it the same way.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    # Dependencies come from the test environment's site-packages (a .pth line adds it after the
    # fresh venv's own), so only spatial-tasks itself is installed from the wheel here.
    fresh_site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                     capture_output=True, text=True, check=True).stdout.strip())
    (fresh_site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)

    probe = (
        "import json, lmms_eval.models\n"  # loads the lmms_eval.models entry points, as the CLI does
        "from lmms_eval.tasks import TaskManager\n"
        "import spatial_tasks\n"
        "tm = TaskManager(include_defaults=False)\n"
        "print(json.dumps({'module': spatial_tasks.__file__,"
        " 'yaml': tm.task_index['spatialtunnel_sample_phase']['yaml_path']}))\n"
    )
    found = json.loads(subprocess.run([py, "-c", probe], capture_output=True, text=True, check=True,
                                      cwd=tmp_path).stdout.strip().splitlines()[-1])
    assert found["module"].startswith(str(fresh_site)), found
    assert found["yaml"].startswith(str(fresh_site)), found  # the installed copy, not the checkout

    out = tmp_path / "out"
    run = subprocess.run([py, "-m", "lmms_eval", "--model", "spatial_baseline", "--model_args", "rule=oracle",
                          "--tasks", "spatialtunnel_sample_phase", "--output_path", str(out),
                          "--verbosity", "DEBUG"], capture_output=True, text=True, cwd=tmp_path,
                         env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    results = list(out.rglob("*_results.json"))
    assert results, run.stdout[-3000:] + run.stderr[-3000:]
    data = json.loads(results[0].read_text())
    assert data["results"]["spatialtunnel_sample_phase"]["v,none"] == pytest.approx(1.0)
