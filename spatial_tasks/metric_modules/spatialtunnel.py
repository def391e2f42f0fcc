"""SpatialTunnel metrics as a local, offline Hugging Face ``evaluate`` module:

    import evaluate, spatial_tasks
    metric = evaluate.load(spatial_tasks.metric_module("spatialtunnel"))
    metric.compute(predictions=[...], references=[...])

The figures are those of ``spatial-tasks rescore spatialtunnel`` (``spatial_tasks.results.hf_evaluate``).
"""

# a module, not the class: evaluate takes the first Metric class it finds in this namespace
from spatial_tasks.metric_modules import base


class SpatialTunnelMetrics(base.BenchmarkMetric):
    benchmark = "spatialtunnel"
