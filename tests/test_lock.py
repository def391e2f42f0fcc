"""requirements.lock is the tested set every README command installs: it must satisfy pyproject.toml (every
dependency of the default install and of every extra locked, within its specifier, for the
documented platform), and .ci/setup must install it as it is."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "python_version": "3.13", "python_full_version": "3.13.0"}


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def lock() -> dict[str, str]:
    """requirements.lock as {canonical name: version}; every entry pinned exactly, with hashes."""
    text = (ROOT / "requirements.lock").read_text()
    entries = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)",
                         text, flags=re.M)
    starts = [line for line in text.splitlines() if line and not line[0].isspace() and not line.startswith("#")]
    assert len(entries) == len(starts), "an entry of requirements.lock is not 'name==version' with its hashes"
    return {canonicalize_name(name): version for name, version, _ in entries}


def _applies(requirement: Requirement, extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**PLATFORM, "extra": extra})


@pytest.mark.parametrize("extra", ["", "render", "cluster", "dev"])
def test_every_dependency_and_extra_is_locked_within_its_specifier(lock, project, extra):
    wanted = project["dependencies"] if not extra else project["optional-dependencies"][extra]
    checked = 0
    for text in wanted:
        requirement = Requirement(text)
        if not _applies(requirement, extra):
            continue
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{requirement} ({extra or 'default install'}) is not in requirements.lock: bash .ci/lock"
        assert requirement.specifier.contains(lock[name], prereleases=True), \
            f"requirements.lock has {name} {lock[name]}, outside {requirement} (bash .ci/lock)"
        checked += 1
    assert checked, f"no requirement of {extra or 'the default install'} applies on the documented platform"


def test_the_lock_was_made_from_this_pyproject(project):
    """.ci/lock records a hash of pyproject's requirements; an edit since then makes the lock stale."""
    need = {"requires-python": project["requires-python"], "dependencies": project["dependencies"],
            "optional-dependencies": project["optional-dependencies"]}
    today = hashlib.sha256(json.dumps(need, sort_keys=True).encode()).hexdigest()
    recorded = re.search(r"^# pyproject-dependencies-sha256: ([0-9a-f]{64})$",
                         (ROOT / "requirements.lock").read_text(), flags=re.M)
    assert recorded, "requirements.lock names no pyproject hash: make it with bash .ci/lock"
    assert recorded.group(1) == today, "pyproject.toml's requirements changed since the lock: run bash .ci/lock"
    assert Version("3.13.0") in Requirement(f"python{project['requires-python']}").specifier


def test_setup_installs_the_lock_as_it_is():
    setup = (ROOT / ".ci" / "setup").read_text()
    assert "pip sync --quiet --require-hashes --compile-bytecode --python .venv/bin/python requirements.lock" in setup
    assert "pip install --quiet --python .venv/bin/python --no-deps -e ." in setup  # nothing resolved outside the lock
    run = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/setup && .venv/bin/python -m pytest" in run
    readme = (ROOT / "README.md").read_text()
    assert readme.count("    bash .ci/setup && ") == 2, "the README holds exactly the two set-up commands"


def test_installed_environment_is_the_lock(lock):
    """The environment running the tests holds every locked version (skipped where it was not
    installed from the lock, e.g. the drift lane)."""
    from spatial_tasks.common.environment import lock_hash, package_version

    if lock_hash() is None:
        pytest.skip("this environment was not installed from requirements.lock (.ci/setup stamps it)")
    assert lock_hash() == hashlib.sha256((ROOT / "requirements.lock").read_bytes()).hexdigest(), \
        "the environment was installed from another requirements.lock: run bash .ci/setup"
    moved = {name: (version, package_version(name)) for name, version in lock.items()
             if package_version(name) != version}
    assert not moved, f"installed versions differ from the lock (locked, installed): {moved}"


def test_the_oldest_python_claimed_is_the_one_the_lowest_lane_and_the_vllm_lane_run(project):
    """requires-python's floor is proven, not claimed: .ci/lowest installs the lower bounds on it (and
    the weekly workflow gives the runner that Python), and the vLLM lane installs the wheel there."""
    floor = re.fullmatch(r">=(3\.\d+)", project["requires-python"]).group(1)
    assert f'lowest-direct {floor} "dev"' in (ROOT / ".ci" / "lowest").read_text()
    drift = (ROOT / ".github" / "workflows" / "drift.yml").read_text()
    assert re.search(rf"lane: lowest\n\s+python: \"{re.escape(floor)}\"", drift), "drift.yml's lowest lane Python"
    assert f"bash .ci/python {floor}" in (ROOT / ".ci" / "vllm").read_text()


def test_render_says_in_one_line_why_a_python_without_bpy_cannot_render():
    from spatial_tasks.generators.common.blender import BPY_PYTHON, install_hint

    assert BPY_PYTHON == (3, 13)
    for python in ((3, 11), (3, 12)):
        line = install_hint(python)
        assert "\n" not in line and f"this is Python {python[0]}.{python[1]}" in line and "3.13" in line
        assert "[render] extra installed nothing" in line
    assert "pip install 'spatial-tasks[render]'" in install_hint(BPY_PYTHON)
