"""spatial-tasks: spatial-reasoning VLM benchmarks as lmms-eval tasks, with Blender generators."""

__version__ = "0.1.0"


def metric_module(benchmark: str) -> str:
    """The path of a benchmark's local Hugging Face ``evaluate`` module, for
    ``evaluate.load(spatial_tasks.metric_module("o3d"))`` (o3d, dori, vague, spatialtunnel)."""
    from pathlib import Path

    path = Path(__file__).with_name("metric_modules") / f"{benchmark}.py"
    if benchmark in ("base", "__init__") or not path.is_file():
        raise ValueError(f"no metric module for {benchmark!r}; choose one of o3d, dori, vague, spatialtunnel")
    return str(path)
