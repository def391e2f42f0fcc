"""ToyBench's lmms-eval hooks: its core's, and the loader bound as a spatial-tasks process_docs."""

from spatial_tasks.harness import DocsHook
from spatial_tasks.toybench import core
from spatial_tasks.toybench.core import agg_acc, doc_to_text, doc_to_visual, process_results  # noqa: F401 -- the YAML names them

process_docs = DocsHook("toybench.process_docs", core.docs)
