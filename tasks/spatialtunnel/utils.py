"""Thin lmms-eval hooks: nothing runs here. Where SpatialTunnel lives:

- hooks the YAMLs name: spatial_tasks/spatialtunnel/tasks.py; the re-splits resplit/tasks.py
- data enters, checked once: spatial_tasks/spatialtunnel/load.py (official tables read from their
  pixels by pixels.py); the re-splits resplit/docs.py
- prompts: tasks/spatialtunnel/prompts/question.jinja (the paper's templates: questions.py)
- answer parser: spatial_tasks/common/yesno.py (yes/no text and first-token logits)
- metrics: spatial_tasks/spatialtunnel/metrics.py, resplit/metrics.py; probing probe/metrics.py
- generator: generators/spatialtunnel/ (scene.py, sampling.py, generate.py)
"""

from spatial_tasks.spatialtunnel.resplit.tasks import process_docs as resplit_process_docs  # noqa: F401
from spatial_tasks.spatialtunnel.resplit.tasks import (  # noqa: F401
    cv_bench_doc_to_text,
    cv_bench_doc_to_visual,
    embspatial_doc_to_messages,
    embspatial_doc_to_text,
    embspatial_doc_to_visual,
    process_results_cv_bench_depth,
    process_results_embspatial_depth,
)
from spatial_tasks.spatialtunnel.tasks import (  # noqa: F401
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    pool_subtasks,
    process_docs,
    process_results,
    process_results_logit,
)
