"""The one seam between spatial-tasks and lmms-eval: everything here relies on lmms-eval internals
or on behaviour it does not document. Nothing else in the package imports a private lmms-eval
name or patches lmms-eval. Supported: lmms-eval ``versions.SUPPORTED`` (checked when this module is
imported); ``contract_problems`` lists every assumption that no longer holds (tests/test_harness.py
runs it, so an lmms-eval upgrade fails there first, naming what broke).

One module per concern, each named below: ``discovery`` (1), ``data`` (2), ``download`` (2, 3,
11), ``failures`` (3), ``pooling`` (4, 5), ``upstream`` (7-9), ``versions`` (10 and the supported
range), ``yaml_reader`` (12), ``before_run`` (13), ``task_index`` (14) and ``contracts`` (every assumption,
checked).
This package re-exports what the rest of spatial-tasks uses (``from spatial_tasks.harness import
TaskData``), and holds ``install`` and the entry point ``model_manifests``.

What lives here, and why:

1. **Task discovery.** lmms-eval has no entry point for tasks, and its ``LMMS_EVAL_PLUGINS`` task
   path is added after the TaskManager is built. It does load the ``lmms_eval.models`` entry-point
   group before any TaskManager exists; ``model_manifests`` (that entry point) therefore installs
   our patches, and ``TaskManager.initialize_tasks`` gets our task folder appended to its include
   paths (user paths first, so built-in tasks still win a name clash; ours are all prefixed).
2. **Where a task's data comes from, passed explicitly.** lmms-eval calls ``process_docs(dataset)``
   with the loaded split only. Our ``process_docs`` hooks are ``DocsHook`` objects taking
   ``(dataset, data)``: ``data`` is a ``TaskData`` built from the task's own YAML fields
   (dataset_path, dataset_name, dataset_kwargs, test_split, lmms_eval_specific_kwargs, metadata)
   and one documented override, the benchmark's ``$SPATIAL_TASKS_<BENCH>_SOURCE``. The patched
   ``ConfigurableTask.download`` binds it. A hook whose source ``datasets`` cannot read as it is (a
   VAGUE folder of JSON items, DORI's undeclared release) loads it itself (``DocsHook.reads_source``).
   The same path runs outside lmms-eval: ``TaskData.from_yaml`` + ``load_docs``.
3. **Load failures are final and end in one line.** lmms-eval retries ``download`` for up to 60 s
   and then exits 0 after a long traceback. For our tasks the download runs once; any failure
   raises ``failures.TaskDataFailed`` (a ``SystemExit``, which lmms-eval's CLI does not catch), so the
   terminal ends with our line -- what failed, what to do -- and the exit status is 2.
4. **Metrics by name, group metrics from pooled records.** Each benchmark's metric table
   (``Benchmark.metrics``) is registered with lmms-eval's aggregation registry when the entry point
   runs (``register_aggregations``): a task YAML names ``aggregation: o3d_acc``.
   **Group metrics from pooled records.** A group's ``aggregate_metric_list`` aggregation receives
   only the subtasks' final values and sizes, so a weighted mean is all it could compute: wrong for
   an SDGM, a bias, Delta = v_cons - v_ctr or any accuracy on a subset. ``aggregation`` returns a
   ``pooling.PooledValue``, a float that also carries the records and the metric function inside the
   evaluating process; ``pool_subtasks`` recomputes the metric on the union of the subtasks'
   records. lmms-eval matches an entry's metric name as a SUBSTRING of the subtask metric names.
5. **One logged record per doc.** ``--log_samples`` writes every metric key's value for every doc;
   ``fan_out`` logs the record once, under the first metric, and a short ``RecordRef`` pointer
   elsewhere (lmms-eval writes unknown objects with ``str``).
6. **Logits as text.** lmms-eval 0.7.3 scores generated text only (its loglikelihood path is
   broken), so a ``*_yesno`` model returns its first-token logits as a JSON payload in the response
   string (``encode_payload`` / ``decode_payload``); generate_until responses reach
   ``process_results`` untouched.
7. **lmms-eval's own answer readers** for the re-split tasks (``_extract_answer_letter`` of its
   ``embspatial`` and ``cv_bench`` tasks), so their accuracy is exactly lmms-eval's.
8. **lmms-eval's Qwen2.5-VL model**, which ``qwen2_5_vl_yesno`` extends to score first-token
   logits with the very prompt ``qwen2_5_vl`` generates from (``lmms_eval_qwen2_5_vl``).
9. **lmms-eval's Qwen3-VL, Gemma 3 and LLaVA-HF models**, which ``qwen3_vl_yesno``,
   ``gemma3_yesno`` and ``llava_hf_yesno`` extend the same way (``lmms_eval_model_module``).
10. **What lmms-eval needs at run time but does not pin** (``versions.RUNTIME_NEEDS``): checked before any
   task or model loads, in the ``lmms-eval`` CLI (``model_manifests``) and in ``spatial-tasks``
   commands that start lmms-eval (``check_runtime``). A mismatch is one line naming the package,
   its installed version, the working range and the fix, with exit status 2 -- never a traceback
   after the model loaded. We name the break rather than patch around it: the fix is the user's
   one pip command, and the lock (requirements.lock) already holds a working version.
11. **The software of a run** (``common.environment.software()``) goes into each of our tasks'
   config metadata when its data loads, so lmms-eval's results file names the versions that made
   it (lmms-eval itself records only "branch@commit" of its own checkout).
12. **Task YAMLs read by libyaml.** lmms-eval parses every task YAML it ships (~3,450) with PyYAML's
   pure-Python ``full_load`` each time it starts: ~3.9 s here. ``yaml.full_load`` is replaced by the
   same loader on PyYAML's C parser (0.5 s), with lmms-eval's own constructors.
13. **Before the model loads** (``before_run``): ``evaluator.simple_evaluate`` is wrapped so that a
   run of our tasks whose checkpoint or Hub data cannot be had (offline, nothing cached) stops in
   one line (``spatial_tasks.preflight``) instead of after minutes of retries.
14. **lmms-eval's own task index kept on disk.** Indexing the 1,927 YAMLs lmms-eval ships takes
   ~1.4 s of every start even on libyaml; ``TaskManager._get_task_and_group`` of lmms-eval's own
   folder is read back from ``<cache>/task-index/`` while none of the files it was made from changed
   (their stamps, lmms-eval's indexing code, the versions), and what the indexing logged is logged
   again. Our folders and a user's ``--include_path`` are indexed as before.
"""

from __future__ import annotations

import sys

from spatial_tasks.harness.contracts import contract_problems  # noqa: F401
from spatial_tasks.harness.data import DocsHook, TaskData, load_docs  # noqa: F401
from spatial_tasks.harness.discovery import install_task_discovery
from spatial_tasks.harness.download import install_download
from spatial_tasks.harness.failures import failure_line  # noqa: F401
from spatial_tasks.harness.pooling import (  # noqa: F401
    ResultsHook,
    aggregation,
    pool_subtasks,
    register_aggregations,
)
from spatial_tasks.harness.task_index import install_task_index_cache
from spatial_tasks.harness.upstream import (  # noqa: F401 -- lmms-eval's own prompt and image functions, for the re-splits
    YESNO_TWINS,
    cv_bench_answer_letter,
    cv_bench_doc_to_text,
    cv_bench_doc_to_visual,
    embspatial_answer_letter,
    embspatial_doc_to_messages,
    embspatial_doc_to_text,
    embspatial_doc_to_visual,
    lmms_eval_model_module,
    lmms_eval_qwen2_5_vl,
)
from spatial_tasks.harness.versions import (  # noqa: F401 -- checked when the seam is imported
    LMMS_EVAL_VERSION,
    RuntimeNeed,
    check_runtime,
    check_version,
    runtime_problems,
)
from spatial_tasks.harness.yaml_reader import install_fast_yaml
from spatial_tasks.models.model_table import MODEL_TABLE

MODELS = {entry.id: entry.host for entry in MODEL_TABLE.values()}  # what lmms-eval registers (models.model_table)


def install() -> None:
    """Install the patches (idempotent): task discovery, our tasks' data loading, fast YAML, the
    cached index of lmms-eval's own tasks; the
    check that a run with our tasks can have its checkpoint and data (``preflight``) is installed
    when the task index is built, once lmms-eval's evaluator module has finished importing (this
    entry point runs while it is still being imported)."""
    install_task_discovery()
    install_download()
    install_fast_yaml()
    install_task_index_cache()
    register_aggregations()


def model_manifests():
    """Entry point ``lmms_eval.models``: our model ids (and, on the way, ``install``)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    problems = runtime_problems()
    if problems:  # before lmms-eval builds a task or loads a model; SystemExit passes its `except Exception`
        print(f"spatial-tasks: {problems[0]}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    install()
    return [ModelManifest(model_id=name, simple_class_path=path) for name, path in MODELS.items()]
