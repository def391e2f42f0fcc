"""Shared pytest fixtures. Keep each one small and documented; put helpers in their own modules.

Every test runs offline: the Hugging Face Hub is unreachable here, so ``HF_HUB_OFFLINE=1`` (and
``HF_DATASETS_OFFLINE=1``) is set for the session before any fixture loads a model.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from openai_server import OpenAIStubServer  # tests/ is on sys.path (pytest's default "prepend" import mode)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# ... for datasets too, and no tokenizer thread pools, as every lmms-eval run of the tests has them
# (tests/lmms.py run_env): a `spatial-tasks` command a test starts with them then forks from the
# worker's server instead of importing torch and transformers again (datasets reads its variable at import).
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch (OpenMP) thread per test process, set before anything imports torch: pytest -n 2 already
# keeps both cores busy, and two threads per worker only make the workers wait on each other.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import lmms  # noqa: F401  (first, so that lmms.SESSION_ENV, every lmms-eval run's, is this environment)

# Property tests run derandomized in CI (.ci/run sets CI=true): the same inputs every run, so a
# green run means something. Locally they draw new inputs; every counterexample ever found is
# pinned with @example in its test.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


QUICK_LEAVES_OUT = ("slow", "render", "cli", "fuzz")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The quick tier (``pytest -m quick``, while working): every test but the end-to-end runs, renders and
    fuzzing, which stay in the whole suite (``.ci/run``)."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in QUICK_LEAVES_OUT):
            item.add_marker(pytest.mark.quick)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (torch, transformers, lmms-eval, datasets ...) lives as long as the
    worker: frozen, the cyclic collector stops walking it again in each full collection (whole-suite
    runs, both workers' GC time summed: 25.4 s before, 19.9 s after)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def log_messages() -> Iterator[list[str]]:
    """The messages our code logs (loguru, INFO and up) while the test runs."""
    from loguru import logger

    messages: list[str] = []
    handler = logger.add(lambda message: messages.append(message.record["message"]), level="INFO")
    yield messages
    logger.remove(handler)


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2.5-VL (``spatial_tasks.models.tiny_qwen``), built once per session whichever
    worker asks first (~5–10 s, ~1 MB): load it with ``from_pretrained(path)`` or run it through lmms-eval with

        --model qwen2_5_vl --model_args pretrained=PATH,device=cpu,device_map=cpu,min_pixels=3136,max_pixels=50176
        --model qwen2_5_vl_yesno --model_args (the same)

    "Yes" and "No" are single tokens. Read-only: copy it before changing anything in it.
    """
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    folder = shared_across_workers(tmp_path_factory, "tiny_qwen2_5_vl",
                                   lambda root: build_tiny_qwen2_5_vl(root / "model", seed=0))
    return folder / "model"


@pytest.fixture(scope="session")
def tiny_family_dirs(tmp_path_factory: pytest.TempPathFactory):
    """``dirs(family)``: a tiny random checkpoint of that transformers model_type
    (``spatial_tasks.models.tiny_models``), built once per session on first use (< 1 s each), whichever
    worker asks first.
    Read-only, like ``tiny_qwen_dir``; qwen2_5_vl is ``tiny_qwen_dir`` itself."""
    from spatial_tasks.models.families import build_tiny_model

    built: dict[str, Path] = {}

    def dirs(family: str) -> Path:
        if family not in built:
            folder = shared_across_workers(tmp_path_factory, f"tiny_{family}",
                                           lambda root: build_tiny_model(family, root / "model", seed=0))
            built[family] = folder / "model"
        return built[family]

    return dirs


@pytest.fixture
def openai_server() -> Iterator[OpenAIStubServer]:
    """A local OpenAI-compatible chat-completions server (tests/openai_server.py), fresh per test.

    It records each request's JSON body in ``server.requests`` (and headers in
    ``server.headers``; read bodies with ``prompt_text``, ``image_urls``, ``decode_data_url``
    from tests/openai_server.py) and answers "Yes" iff the first colour word of the prompt is
    warm (red/orange/yellow/magenta/pink), else "No". Assign ``server.responder`` any
    ``body -> str`` function to answer differently.

    The real lmms-eval CLI against it (chat model ``openai``; images arrive as
    ``data:image/png;base64,...`` URLs)::

        lmms-eval --model openai --model_args \\
          model_version=stub,base_url=http://127.0.0.1:PORT/v1,api_key=test,num_concurrent=1,max_retries=1,retry_backoff_s=0,httpx_trust_env=False \\
          --tasks ... --output_path ...

    with PORT = ``server.port`` (``server.base_url`` is the whole ``http://127.0.0.1:PORT/v1``).
    ``base_url``/``api_key`` may instead come from ``OPENAI_API_BASE``/``OPENAI_API_KEY``;
    ``httpx_trust_env=False`` keeps HTTP(S)_PROXY settings from routing localhost elsewhere;
    ``max_retries=1,retry_backoff_s=0`` make a server error show up at once as a response
    "[LMMS_EVAL_REQUEST_FAILED after 1 retries] ..." instead of five slow retries. Keep
    ``model_version`` free of "o1"/"o3"/"o4"/"gpt-5" (lmms-eval then sends
    ``max_completion_tokens`` instead of ``max_tokens``; the server accepts both). The CLI
    runs in another process: start it while this fixture is active and read ``requests``
    afterwards.
    """
    with OpenAIStubServer() as server:
        yield server


def shared_across_workers(tmp_path_factory: pytest.TempPathFactory, name: str, make) -> Path:
    """``make(folder)`` once per test session, whichever pytest-xdist worker asks first; the others
    wait for it and get the same folder (each worker has its own session fixtures). A run that
    failed is not retried by the next worker: its error is raised there too."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    base = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done, failed = base / name, base / f"{name}.done", base / f"{name}.failed"
    with FileLock(str(base / f"{name}.lock")):
        if failed.exists():
            raise RuntimeError(f"{name}: building it failed in another worker: {failed.read_text()}")
        if not done.exists():
            try:
                make(folder)
            except BaseException as err:
                failed.write_text(f"{type(err).__name__}: {err}"[:2000])
                raise
            done.touch()
    return folder


@pytest.fixture(scope="session")
def lmms_run(tmp_path_factory: pytest.TempPathFactory):
    """``lmms_run(model, model_args, tasks, *extra, env=None) -> lmms.Run``: one real lmms-eval run,
    made once per test session whichever test or worker asks first (a run costs ~7–15 s of CPU
    here). Read-only: copy ``run.out`` before changing anything in it."""
    import hashlib
    import json

    from lmms import read_run, run_lmms_eval

    def run(model: str, model_args: str, tasks: str, *extra: str, env: dict | None = None):
        key = hashlib.sha1(json.dumps([model, model_args, tasks, extra, sorted((env or {}).items())]).encode())

        def make(folder: Path) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            made = run_lmms_eval(folder / "out", model, model_args, tasks, *extra, env=env)
            (folder / "log.txt").write_text(made.output)
            (folder / "rc").write_text(str(made.returncode))

        folder = shared_across_workers(tmp_path_factory, f"run_{model}_{key.hexdigest()[:12]}", make)
        return read_run(folder / "out", int((folder / "rc").read_text()), (folder / "log.txt").read_text())

    return run


@pytest.fixture(scope="session")
def baseline_run(lmms_run):
    """``baseline_run(rule, tasks, env=None) -> lmms.Run``: ``lmms_run`` of ``spatial_baseline`` with
    that rule on those tasks."""
    return lambda rule, tasks, env=None: lmms_run("spatial_baseline", f"rule={rule}", tasks, env=env)


@pytest.fixture(scope="session")
def golden_runs(tmp_path_factory: pytest.TempPathFactory, baseline_run) -> Path:
    """Real lmms-eval runs of the baseline over every bundled sample (``tests/golden_figures.RUNS``:
    one run per benchmark, relabelled as a paper model), made once per session. Read-only."""
    from golden_figures import make_runs

    return shared_across_workers(tmp_path_factory, "golden_runs", lambda root: make_runs(root, baseline_run))


@pytest.fixture(scope="session")
def page_runs(tmp_path_factory: pytest.TempPathFactory, golden_runs, baseline_run) -> Path:
    """For the report page's tests: every benchmark's golden run, and the oracle on the SpatialTunnel
    samples (the vertical golden run's questions, answered right), made once per session. Read-only."""
    import shutil

    def make(root: Path) -> None:
        for folder in ("spatialtunnel", "o3d", "dori", "vague"):
            shutil.copytree(golden_runs / folder, root / folder)
        oracle = baseline_run("oracle", "spatialtunnel_sample,spatialtunnel_logit_sample")
        assert oracle.results is not None, oracle.output[-3000:]
        shutil.copytree(oracle.out, root / "oracle")

    return shared_across_workers(tmp_path_factory, "page_runs", make)


@pytest.fixture(scope="session")
def page_report(tmp_path_factory: pytest.TempPathFactory, page_runs) -> Path:
    """``spatial-tasks report`` of ``page_runs`` (index.html and thumbs/ with it), made once per session. Read-only."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report

    folder = shared_across_workers(tmp_path_factory, "page_report", lambda root: write_report(read_runs(page_runs), root / "report"))
    return folder / "report"
