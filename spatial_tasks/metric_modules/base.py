"""The shared ``evaluate.Metric`` of the benchmark modules in this folder: each module names its
benchmark; ``compute`` is ``spatial_tasks.results.hf_evaluate.compute``."""

import datasets
import evaluate

from spatial_tasks.results import hf_evaluate


class BenchmarkMetric(evaluate.Metric):
    benchmark = ""  # set by each benchmark's module

    def _info(self):
        return evaluate.MetricInfo(
            description=hf_evaluate.__doc__,
            citation="",
            inputs_description="predictions: list of str (the model's outputs); references: list of str "
                               "(each question's logged record or doc, as a JSON object)",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, **options):
        return hf_evaluate.compute(self.benchmark, predictions, references, **options)
