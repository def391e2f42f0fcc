"""spatial-tasks: spatial-reasoning VLM benchmarks as lmms-eval tasks, with Blender generators."""

__version__ = "0.1.0"


def metric_module(benchmark: str) -> str:
    """The path of a benchmark's local Hugging Face ``evaluate`` module, for
    ``evaluate.load(spatial_tasks.metric_module("o3d"))`` (every registered benchmark that scores
    questions: ``spatial-tasks list`` names them)."""
    from spatial_tasks.metric_modules import module_file

    return str(module_file(benchmark))
