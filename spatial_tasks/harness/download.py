"""(2) + (3) + (5) + (11) lmms-eval's ``ConfigurableTask.download``, patched for our tasks: their
``TaskData`` bound to the docs hook, their declared metrics to the results hook, one try (no 60 s of
retries), any failure one line (``TaskDataFailed``), and the run's software recorded into the task's
config metadata."""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping

from spatial_tasks.common.origin import folder_cache
from spatial_tasks.harness.data import DocsHook, TaskData, metric_names
from spatial_tasks.harness.failures import TaskDataFailed, check_hub_reachable
from spatial_tasks.harness.pooling import ResultsHook


def install_download() -> None:
    from lmms_eval.api.task import ConfigurableTask
    from tenacity import stop_after_attempt

    original = ConfigurableTask.download
    if getattr(original, "_spatial_tasks", False):
        return
    once = original.retry_with(stop=stop_after_attempt(1), reraise=True)

    @functools.wraps(original)
    def download(self, dataset_kwargs=None):
        results = self.config.process_results
        if isinstance(results, ResultsHook):  # the metrics it fans each record out to: the YAML's
            self.config.process_results = results.bound(metric_names(self.config.metric_list))
        hook = self.config.process_docs
        if not isinstance(hook, DocsHook):
            return original(self, dataset_kwargs)
        data = hook.resolve(TaskData.of_task(self))
        _record_software(self.config, data)
        try:
            check_hub_reachable(data)
            if hook.reads_source(data):
                import datasets

                docs = hook(None, data)
                self.dataset = datasets.DatasetDict({data.split: docs})
                self.dataset_no_image = self.dataset  # docs hold image references, never image columns
                return None
            self.DATASET_PATH, self.DATASET_NAME = data.path, data.name
            self.config.process_docs = functools.partial(hook, data=data)
            try:
                return once(self, folder_cache(data.path, data.kwargs))
            finally:
                self.config.process_docs = hook
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:
            failed = TaskDataFailed(data, err)
            print(failed.message, file=sys.stderr, flush=True)  # the terminal's last line; exit status 2
            raise failed from err

    download._spatial_tasks = True
    ConfigurableTask.download = download


def _record_software(config, data: TaskData) -> None:
    """11. The run's software and the data its docs came from (after the documented source
    override, which lmms-eval's own config does not show), into the task's config metadata, which
    lmms-eval writes to the results file (``configs.<task>.metadata``); results.tidy copies both
    into every record, and the report page reads its images back from that data."""
    from spatial_tasks.common.environment import (
        DATA_KEY,
        ENVIRONMENT_KEY,
        software,
    )

    metadata = dict(config.metadata) if isinstance(config.metadata, Mapping) else {}
    metadata[ENVIRONMENT_KEY] = software()
    metadata[DATA_KEY] = data.as_recorded()
    config.metadata = metadata
