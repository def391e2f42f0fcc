"""spatial-tasks: spatial-reasoning VLM benchmarks as lmms-eval tasks, with Blender generators."""

__version__ = "0.1.0"
