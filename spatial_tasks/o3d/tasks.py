"""lmms-eval hooks for the O3-D tasks (tasks/o3d/*.yaml point here through tasks/o3d/utils.py).

One canonical doc per ``visual_questions`` row (``spatial_tasks.o3d.load``); each task keeps a
slice of it:

=================== ================================================================= ==============
task                questions                                                         metric set
=================== ================================================================= ==============
o3d_markers         marked (clarity 4), synthetic kb-0cue / kb-1cue / kb-2cue         MARKERS_METRICS
o3d_clarity_low     unmarked, clarity 2, same subsets                                 BASIC_METRICS
o3d_clarity_med     unmarked, clarity 3                                               LANGUAGE_METRICS
o3d_clarity_high    unmarked, clarity 3.5                                             LANGUAGE_METRICS
o3d_real            marked, clarity 4, real-012cue-cropped (Table 12's real columns)  REAL_METRICS
o3d_icl_cot         marked kb-1cue / kb-2cue questions with 2 ICL+CoT demonstrations  ICL_METRICS
=================== ================================================================= ==============

``process_results`` returns ONE per-doc record (``record``) fanned out to every metric key of
the task; each aggregation (``agg_<metric>``) is a thin wrapper over a pure function of
``spatial_tasks.o3d.metrics`` (``METRICS``). The record carries everything those functions and
``spatial-tasks rescore o3d --format lmms-samples`` need (question, response, ground truth, cues,
strength, clarity, the question's language tags), so saved samples can be re-scored.

Group metrics (``o3d``) are the metrics of the subtasks' pooled records, never means of means
(``spatial_tasks.harness``): exactly what ``spatial-tasks rescore o3d`` recomputes from
the saved samples.

Data source: the image subsets come from the same place as the task's ``visual_questions``: its
``dataset_path`` (a Hub id or a folder in the official layout), or for a task that names a parquet
file (the bundled sample), the dataset root above ``<root>/visual_questions/<file>``
(``subset_source``). The task's TaskData carries both (spatial_tasks.harness).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
from loguru import logger as log
from PIL import Image

from spatial_tasks.common import prompts as templates
from spatial_tasks.harness import (  # noqa: F401
    DocsHook,
    PooledValue,
    RecordRef,
    TaskData,
    aggregation,
    fan_out,
    pool_subtasks,
)
from spatial_tasks.o3d import load, metrics, schema
from spatial_tasks.o3d.parse import is_correct, parse_answer
from spatial_tasks.o3d.prompts import (
    correct_letter,
    cot_answer,
    demonstration_question,
    parse_prompt,
    stable_seed,
    with_answer_instruction,
)

BENCHMARK = "o3d"
PROMPT_TEMPLATE = "prompt.jinja"
ICL_TEMPLATE = "icl_cot.jinja"
# answer_instruction: None keeps the dataset's "Answer A or B."; the authors gave Kosmos2 "Answer:".
DEFAULT_PROMPT_KWARGS = {"pre_prompt": "", "post_prompt": "", "answer_instruction": None}
IMAGE_PLACEHOLDER = re.compile(r"<image (\d+)>")

# Synthetic subsets of the tasks: kb-no-lp (HP without linear perspective) is a separate
# experiment that Table 12 leaves out (tasks/o3d/README.md, "Paper vs authors' code" (5)).
SYNTHETIC_TASK_SUBSETS = ("kb-0cue", "kb-1cue", "kb-2cue")
ICL_SUBSETS = ("kb-1cue", "kb-2cue")  # a CoT demonstration needs at least one cue
REAL_TASK_SUBSETS = ("real-012cue-cropped",)  # Table 12's real columns use the cropped set only
CLARITY = {"low": 2.0, "med": 3.0, "high": 3.5}

# ---------------------------------------------------------------------------------------------
# Metrics: one lmms-eval metric per figure, each a pure function of the records
# ---------------------------------------------------------------------------------------------


def _acc(rows) -> float | None:
    """Accuracy over the scored rows (Table 12's cells); unparseable answers are wrong."""
    return metrics.accuracy(rows)["acc"]


def _acc_near(rows) -> float | None:
    """Acc_N: accuracy on target-near rows (the quantity every SDGM is taken of)."""
    return metrics.near_far_bias(rows)["acc_near"]


def _acc_far(rows) -> float | None:
    """Acc_F: accuracy on target-far rows."""
    return metrics.near_far_bias(rows)["acc_far"]


def _bias_nf(rows) -> float | None:
    """Near-far bias (paper Eq. 1): Acc_F - Acc_N over the given rows."""
    return metrics.near_far_bias(rows)["bias"]


def _by_cue(cue: str) -> Callable[[Sequence[Mapping]], float | None]:
    def fn(rows):
        return (metrics.accuracy_by_cue(rows).get(cue) or {}).get("acc")

    fn.__doc__ = f"Table 12 column {cue}: single-cue records with cue {cue}, all strengths."
    return fn


def _by_num_cues(n: int) -> Callable[[Sequence[Mapping]], float | None]:
    def fn(rows):
        return (metrics.accuracy_by_num_cues(rows).get(n) or {}).get("acc")

    fn.__doc__ = f"Table 12 column {n}cue: {n}-cue records" + (" (all)." if n == 0 else " at regular strength.")
    return fn


def _sdgm_vision(rows) -> float | None:
    """Vision influence (paper Eq. 2): SDGM of Acc_N over the cue groups, SDGM population."""
    return metrics.sdgm_vision(rows)["sdgm"]


def _sdgm_language(rows) -> float | None:
    """Language influence (paper Eq. 2): SDGM of Acc_N over the question groups, SDGM population."""
    return metrics.sdgm_language(rows)["sdgm"]


def _msdgm(variation: str) -> Callable[[Sequence[Mapping]], float | None]:
    def fn(rows):
        return metrics.modified_sdgm(rows, variation)["sdgm"]

    fn.__doc__ = f"Modified SDGM (paper Eq. 3) for the variation type {variation}."
    return fn


def unparseable_share(rows: Sequence[Mapping]) -> float | None:
    """Share of unparseable answers over ALL records (gt 'none' included), as the O3-D README counts."""
    rows = list(rows)
    return sum(1 for r in rows if r.get("label") == "unparseable") / len(rows) if rows else None


METRICS: dict[str, Callable[[Sequence[Mapping]], float | None]] = {
    "acc": _acc,
    "acc_near": _acc_near,
    "acc_far": _acc_far,
    "bias_nf": _bias_nf,
    "unparseable": unparseable_share,
    **{f"acc_{cue}": _by_cue(cue) for cue in metrics.VISION_CUES},
    **{f"acc_{n}cue": _by_num_cues(n) for n in (0, 1, 2)},
    "sdgm_vision": _sdgm_vision,
    "sdgm_language": _sdgm_language,
    "consistency": metrics.language_consistency,
    **{f"msdgm_{tag}": _msdgm(tag) for tag in metrics.LANGUAGE_TAGS},
}

BASIC_METRICS = ("acc", "acc_near", "acc_far", "bias_nf", "unparseable")
VISION_METRICS = ("sdgm_vision",)
LANGUAGE_ONLY = ("sdgm_language", "consistency", *(f"msdgm_{tag}" for tag in metrics.LANGUAGE_TAGS))
CUE_METRICS = tuple(f"acc_{cue}" for cue in metrics.VISION_CUES)
NUM_CUE_METRICS = ("acc_0cue", "acc_1cue", "acc_2cue")
LANGUAGE_METRICS = BASIC_METRICS + VISION_METRICS + LANGUAGE_ONLY
MARKERS_METRICS = BASIC_METRICS + CUE_METRICS + NUM_CUE_METRICS + VISION_METRICS + LANGUAGE_ONLY
REAL_METRICS = BASIC_METRICS + NUM_CUE_METRICS
ICL_METRICS = BASIC_METRICS + ("acc_1cue", "acc_2cue")
METRIC_SETS = {"basic": BASIC_METRICS, "language": LANGUAGE_METRICS, "markers": MARKERS_METRICS,
               "real": REAL_METRICS, "icl": ICL_METRICS}


def aggregate(name: str, items: list) -> PooledValue:
    """The metric ``name`` of the records (NaN when undefined), carrying the records for pooling."""
    return aggregation(name, METRICS[name])(items)


def _aggregation(name: str) -> Callable[[list], PooledValue]:
    return aggregation(name, METRICS[name])


agg_acc = _aggregation("acc")
agg_acc_near = _aggregation("acc_near")
agg_acc_far = _aggregation("acc_far")
agg_bias_nf = _aggregation("bias_nf")
agg_unparseable = _aggregation("unparseable")
agg_acc_HP = _aggregation("acc_HP")
agg_acc_OC = _aggregation("acc_OC")
agg_acc_RS = _aggregation("acc_RS")
agg_acc_TG = _aggregation("acc_TG")
agg_acc_SA = _aggregation("acc_SA")
agg_acc_LS = _aggregation("acc_LS")
agg_acc_FO = _aggregation("acc_FO")
agg_acc_FS = _aggregation("acc_FS")
agg_acc_0cue = _aggregation("acc_0cue")
agg_acc_1cue = _aggregation("acc_1cue")
agg_acc_2cue = _aggregation("acc_2cue")
agg_sdgm_vision = _aggregation("sdgm_vision")
agg_sdgm_language = _aggregation("sdgm_language")
agg_consistency = _aggregation("consistency")
agg_msdgm_query = _aggregation("msdgm_query")
agg_msdgm_order = _aggregation("msdgm_order")
agg_msdgm_formality = _aggregation("msdgm_formality")
agg_msdgm_vocabulary = _aggregation("msdgm_vocabulary")
agg_msdgm_clarity_level = _aggregation("msdgm_clarity_level")

# ---------------------------------------------------------------------------------------------
# Data source: where the image subsets live
# ---------------------------------------------------------------------------------------------

_PASSED_TO_SUBSETS = ("revision", "token", "cache_dir")


def subset_source(data: TaskData) -> tuple[str, dict]:
    """(source, load kwargs) of a task's image subsets, from its TaskData: its dataset_path, or for
    a local builder (``dataset_path: parquet`` + ``data_files``, as the bundled sample) the dataset
    root above ``.../visual_questions/<file>``."""
    kwargs = {k: data.kwargs[k] for k in _PASSED_TO_SUBSETS if k in data.kwargs}
    if data.kwargs.get("load_from_disk"):
        raise schema.SchemaError(f"task {data.task}: load_from_disk gives a saved visual_questions split, which "
                                 "says nothing about the image subsets; point dataset_path at the O3-D folder")
    if not data.is_local_builder:
        folder = data.local_folder
        return (str(folder) if folder is not None else data.path), kwargs
    root = _root_of_data_files(data.kwargs.get("data_files"))
    if root is None:
        raise schema.SchemaError(f"task {data.task}: its data_files {data.kwargs.get('data_files')!r} are not "
                                 f"<root>/{schema.QUESTIONS_CONFIG}/<file> in the official layout, so the image "
                                 "subsets cannot be found")
    return root, kwargs


def _data_file_paths(data_files: Any) -> list[str]:
    if isinstance(data_files, str):
        return [data_files]
    if isinstance(data_files, Mapping):
        return [p for v in data_files.values() for p in _data_file_paths(v)]
    if isinstance(data_files, (list, tuple)):
        return [p for v in data_files for p in _data_file_paths(v)]
    return []


def _root_of_data_files(data_files: Any) -> str | None:
    """The folder in the official layout (``<root>/visual_questions/<file>``) holding the files."""
    for file in _data_file_paths(data_files):
        path = Path(file)
        if path.parent.name == schema.QUESTIONS_CONFIG and path.parent.parent.is_dir():
            return str(path.parent.parent.resolve())
    return None


# ---------------------------------------------------------------------------------------------
# process_docs
# ---------------------------------------------------------------------------------------------


def build_task_docs(questions: datasets.Dataset, data: TaskData, *, subsets: Sequence[str], marked: bool,
                    clarity: float | None = None) -> datasets.Dataset:
    """Canonical docs of one task: the questions of ``subsets`` with this marking (and clarity), their
    images from the task's own source (``subset_source``)."""
    source, load_kwargs = subset_source(data)
    how = f"${data.override}" if data.override else f"task {data.task}'s dataset_path"
    log.info(f"O3-D image subsets from {source!r} ({how})")
    origin = data.origin(questions)
    docs = load.process_docs(questions, source=source, subsets=subsets, marked=marked, clarity=clarity,
                             load_kwargs=load_kwargs, origin=origin)
    if len(docs) == 0:
        kind = "marked" if marked else "unmarked"
        level = "" if clarity is None else f" at clarity {clarity:g}"
        raise schema.SchemaError(f"{origin.where}: no {kind} questions{level} about the subsets {list(subsets)}; "
                                 "this task has nothing to evaluate on this data")
    return _fill_missing_strengths(docs)


def _fill_missing_strengths(docs: datasets.Dataset) -> datasets.Dataset:
    """Cue strengths that the source leaves null, recovered as the authors' renders imply.

    The single-strength sets (FS, every 2-cue set) are regular (1.0). Each single-cue scene was
    rendered at strength 1 and then 2, so within one (subset, cue, target position) the images
    sorted by name alternate 1, 2, 1, 2 ... -- the rule that reproduces the paper's sim1 from the
    authors' released outputs (README, "Paper vs authors' code" (3)). Applied only to null values,
    over all images of the subset (not only those this task asks about).
    """
    table = docs.with_format("arrow")[:]
    strength = table.column("cue_strength").to_pylist()
    synthetic = table.column("synthetic").to_pylist()
    cues = table.column("cues").to_pylist()
    todo = [i for i, (s, syn, c) in enumerate(zip(strength, synthetic, cues)) if s is None and syn and c]
    if not todo:
        return docs
    names = table.column("image_name").to_pylist()
    subset_names = table.column("subset_name").to_pylist()
    positions = table.column("odd_position").to_pylist()
    sources = table.column("source").to_pylist()
    parity: dict[tuple, dict[str, float]] = {}
    for i in todo:
        c = tuple(cues[i])
        if len(c) != 1 or c == ("FS",):
            strength[i] = 1.0
            continue
        key = (sources[i], subset_names[i], c, positions[i])
        if key not in parity:
            parity[key] = _render_order_strengths(sources[i], subset_names[i], c, positions[i])
        strength[i] = parity[key].get(names[i])
    column = pa.array(strength, type=pa.float64())
    new = table.set_column(table.schema.get_field_index("cue_strength"), "cue_strength", column)
    return datasets.Dataset(new, fingerprint=f"{docs._fingerprint}-strengths"[:64])


def _render_order_strengths(source: str, subset: str, cues: tuple, position: str) -> dict[str, float]:
    ds = load.get_source(source).subset(subset)
    meta = ds.select_columns(["image_name", "cues", "odd_position"]).with_format("arrow")[:].to_pydict()
    group = sorted({n for n, c, p in zip(meta["image_name"], meta["cues"], meta["odd_position"])
                    if tuple(schema.parse_cues(c)) == cues and str(p).strip().lower() == position})
    return {name: 1.0 if k % 2 == 0 else 2.0 for k, name in enumerate(group)}


def subsets_of_task(process_docs: str) -> tuple[str, ...]:
    """The image subsets a task reads, by the name of its process_docs hook ("utils.process_docs_real")."""
    name = process_docs.rsplit(".", 1)[-1]
    return {"process_docs_markers": SYNTHETIC_TASK_SUBSETS, "process_docs_clarity_low": SYNTHETIC_TASK_SUBSETS,
            "process_docs_clarity_med": SYNTHETIC_TASK_SUBSETS, "process_docs_clarity_high": SYNTHETIC_TASK_SUBSETS,
            "process_docs_real": REAL_TASK_SUBSETS, "process_docs_icl_cot": ICL_SUBSETS}.get(name, ())


def _hook(name: str, build) -> DocsHook:
    return DocsHook(f"o3d.{name}", build, source_env=load.SOURCE_ENV, default_source=schema.HUB_ID)


process_docs_markers = _hook("process_docs_markers", lambda ds, data: build_task_docs(
    ds, data, subsets=SYNTHETIC_TASK_SUBSETS, marked=True))
process_docs_clarity_low = _hook("process_docs_clarity_low", lambda ds, data: build_task_docs(
    ds, data, subsets=SYNTHETIC_TASK_SUBSETS, marked=False, clarity=CLARITY["low"]))
process_docs_clarity_med = _hook("process_docs_clarity_med", lambda ds, data: build_task_docs(
    ds, data, subsets=SYNTHETIC_TASK_SUBSETS, marked=False, clarity=CLARITY["med"]))
process_docs_clarity_high = _hook("process_docs_clarity_high", lambda ds, data: build_task_docs(
    ds, data, subsets=SYNTHETIC_TASK_SUBSETS, marked=False, clarity=CLARITY["high"]))
process_docs_real = _hook("process_docs_real", lambda ds, data: build_task_docs(
    ds, data, subsets=REAL_TASK_SUBSETS, marked=True))
process_docs_icl_cot = _hook("process_docs_icl_cot", lambda ds, data: attach_demonstrations(build_task_docs(
    ds, data, subsets=ICL_SUBSETS, marked=True)))


# ---------------------------------------------------------------------------------------------
# ICL + CoT: two demonstrations per query
# ---------------------------------------------------------------------------------------------

# What a demonstration needs to be shown (load.image_for) and answered.
_DEMO_FIELDS = ("subset_name", "image_name", "subset_row", "image_column", "draw_markers", "is_marked")
DEMO_TYPE = pa.struct([("subset_name", pa.string()), ("image_name", pa.string()), ("subset_row", pa.int64()),
                       ("image_column", pa.string()), ("draw_markers", pa.bool_()), ("is_marked", pa.bool_()),
                       ("position", pa.string()), ("question", pa.string())])


def attach_demonstrations(docs: datasets.Dataset, seed: int = 0) -> datasets.Dataset:
    """Add ``icl_demos`` to every doc: one target-near and one target-far image with exactly the
    query's cues (another image, the query's marking), in a random order, each with its own
    question freshly drawn at the query's clarity (prompts.demonstration_question; never the
    query's text); choices and order are seeded by ``seed`` and the question id, so every run shows
    the same prompts. Queries whose cue set has no other near or far image are dropped (logged)."""
    table = docs.with_format("arrow")[:]
    cols = {c: table.column(c).to_pylist()
            for c in (*_DEMO_FIELDS, "cues", "gt_position", "question_id", "source", "question")}
    pool: dict[tuple, dict[str, dict[str, dict]]] = defaultdict(lambda: {"near": {}, "far": {}})
    for i in range(table.num_rows):
        if cols["gt_position"][i] in ("near", "far"):
            key = (cols["source"][i], tuple(cols["cues"][i]), cols["is_marked"][i])
            image = (cols["subset_name"][i], cols["image_name"][i])
            pool[key][cols["gt_position"][i]].setdefault(image, {f: cols[f][i] for f in _DEMO_FIELDS})
    keep: list[int] = []
    demos: list[list[dict]] = []
    for i in range(table.num_rows):
        key = (cols["source"][i], tuple(cols["cues"][i]), cols["is_marked"][i])
        own = (cols["subset_name"][i], cols["image_name"][i])
        rng = random.Random(stable_seed("o3d-icl-cot", seed, cols["question_id"][i]))
        chosen = []
        for position in ("near", "far"):
            candidates = [img for name, img in sorted(pool[key][position].items()) if name != own]
            if not candidates:
                break
            question = demonstration_question(cols["question"][i], (cols["question_id"][i], position), seed)
            chosen.append({**rng.choice(candidates), "position": position, "question": question})
        if len(chosen) != 2:
            continue
        rng.shuffle(chosen)
        keep.append(i)
        demos.append(chosen)
    dropped = table.num_rows - len(keep)
    if dropped:
        log.warning(f"o3d_icl_cot: {dropped} of {table.num_rows} questions have no other near/far image "
                    "with the same cues for the demonstrations; left out")
    out = table.take(pa.array(keep, type=pa.int64())).append_column("icl_demos", pa.array(demos, pa.list_(DEMO_TYPE)))
    return datasets.Dataset(out, fingerprint=f"{docs._fingerprint}-icl{seed}"[:64])


def demonstration_doc(doc: Mapping[str, Any], demo: Mapping[str, Any]) -> dict:
    """A doc-like mapping of one demonstration image (enough for ``load.image_for``)."""
    return {"source": doc["source"], **{f: demo[f] for f in _DEMO_FIELDS}}


def demonstration_answer(doc: Mapping[str, Any], demo: Mapping[str, Any]) -> str:
    """The worked CoT answer of a demonstration to its own question (that question's correct letter)."""
    tags = parse_prompt(demo["question"])
    if tags is None:
        raise ValueError(f"o3d_icl_cot: a demonstration question of {doc['question_id']!r} is not in the official "
                         f"form: {demo['question']!r}")
    return cot_answer(doc["cues"], demo["position"], correct_letter(tags, demo["position"]))


# ---------------------------------------------------------------------------------------------
# doc_to_visual / doc_to_text / doc_to_messages / doc_to_target
# ---------------------------------------------------------------------------------------------


def _prompt_kwargs(lmms_eval_specific_kwargs: Mapping | None) -> dict:
    return {**DEFAULT_PROMPT_KWARGS, **(lmms_eval_specific_kwargs or {})}


def _shown_question(doc: Mapping[str, Any], kwargs: Mapping) -> str:
    """The dataset's question with the task's answer instruction (``answer_instruction``)."""
    try:
        return with_answer_instruction(doc["question"], kwargs.get("answer_instruction"))
    except ValueError as err:
        raise ValueError(f"o3d question {doc['question_id']!r}: {err}") from None


def doc_to_visual(doc: Mapping[str, Any]) -> list[Image.Image]:
    """The one image of the question (marked questions on synthetic images: markers drawn from masks)."""
    return [load.image_for(doc)]


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    kwargs = _prompt_kwargs(lmms_eval_specific_kwargs)
    return templates.render(BENCHMARK, PROMPT_TEMPLATE, **{**kwargs, "question": _shown_question(doc, kwargs)})


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return doc["gt_label"]


def doc_to_visual_icl(doc: Mapping[str, Any]) -> list[Image.Image]:
    """The demonstrations' images (in prompt order), then the query's: ``<image 1>`` ... ``<image 3>``."""
    return [*(load.image_for(demonstration_doc(doc, d)) for d in doc["icl_demos"]), load.image_for(doc)]


def doc_to_text_icl(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> str:
    """Demonstrations then the query, each image referred to by an ``<image N>`` placeholder at its
    place (N indexes ``doc_to_visual_icl``). Models that interleave at such placeholders (lmms-eval's
    simple qwen2_5_vl with ``interleave_visuals=True``) put every image there; others show the images
    first and keep the placeholders as labels. Chat models get ``doc_to_messages_icl`` instead."""
    kwargs = _prompt_kwargs(lmms_eval_specific_kwargs)
    question = _shown_question(doc, kwargs)
    demos = [{"question": with_answer_instruction(d["question"], kwargs.get("answer_instruction")),
              "answer": demonstration_answer(doc, d)} for d in doc["icl_demos"]]
    return templates.render(BENCHMARK, ICL_TEMPLATE, **{**kwargs, "demos": demos, "question": question})


def interleave(text: str, visuals: Sequence[Any]) -> list[dict]:
    """Chat content parts: the text split at its ``<image N>`` placeholders, image N at each place."""
    parts: list[dict] = []
    pieces = IMAGE_PLACEHOLDER.split(text)
    for k, piece in enumerate(pieces):
        if k % 2:  # a captured image number
            index = int(piece) - 1
            if not 0 <= index < len(visuals):
                raise ValueError(f"prompt refers to <image {piece}> but there are {len(visuals)} images")
            parts.append({"type": "image", "url": visuals[index]})
        elif piece.strip():
            parts.append({"type": "text", "text": piece.strip()})
    return parts


def doc_to_messages_icl(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping | None = None) -> list[dict]:
    """Chat models (lmms-eval's default for qwen2_5_vl and openai): one user turn with every image
    interleaved at its place among the demonstrations' texts and the query."""
    text = doc_to_text_icl(doc, lmms_eval_specific_kwargs)
    return [{"role": "user", "content": interleave(text, doc_to_visual_icl(doc))}]


# ---------------------------------------------------------------------------------------------
# process_results: one record per doc
# ---------------------------------------------------------------------------------------------

RECORD_FIELDS = (
    "benchmark", "question_id", "subset_name", "image_name", "image_family", "in_paper", "synthetic",
    "is_real", "is_marked", "icl", "question", "ques_clarity", "clarity_level", "query", "order",
    "formality", "vocabulary", "cues", "cue_strength", "gt_position", "response", "label", "correct",
)


def record(doc: Mapping[str, Any], response: str, *, icl: bool = False) -> dict:
    """The per-doc record (fields of ``spatial_tasks.o3d.metrics`` plus what re-scoring needs)."""
    response = response if isinstance(response, str) else ("" if response is None else str(response))
    label = parse_answer(response, doc["question"])
    tags = parse_prompt(doc["question"])
    return {
        "benchmark": BENCHMARK,
        "question_id": doc["question_id"],
        "subset_name": doc["subset_name"],
        "image_name": doc["image_name"],
        "image_family": doc["released_family"],  # the authors' family name (kb-1cue, o3dcf-real, ...)
        "in_paper": True,  # an official-layout row (rescore.summarise_model's Table 12 selection)
        "synthetic": bool(doc["synthetic"]),
        "is_real": not doc["synthetic"],
        "is_marked": bool(doc["is_marked"]),
        "icl": icl,
        "question": doc["question"],
        "ques_clarity": doc["ques_clarity"],
        "clarity_level": tags.clarity_level if tags else doc["clarity_level"],
        "query": tags.query if tags else None,
        "order": tags.order if tags else None,
        "formality": tags.formality if tags else None,
        "vocabulary": tags.vocabulary if tags else None,
        "cues": list(doc["cues"] or []),
        "cue_strength": doc["cue_strength"],
        "gt_position": doc["gt_position"],
        "response": response,
        "label": label,
        "correct": is_correct(label, doc["gt_position"]),
    }


def rescored(rec: Mapping[str, Any]) -> dict:
    """A logged record re-parsed from its own response and question (what rescoring does)."""
    label = parse_answer(rec.get("response"), rec.get("question"))
    return {**rec, "label": label, "correct": is_correct(label, rec.get("gt_position"))}


def _first(results: Sequence[Any]) -> str:
    first = results[0] if results else ""
    while isinstance(first, (list, tuple)):
        first = first[0] if first else ""
    return first if isinstance(first, str) else ("" if first is None else str(first))


def process_results_basic(doc, results):
    return fan_out(record(doc, _first(results)), BASIC_METRICS)


def process_results_language(doc, results):
    return fan_out(record(doc, _first(results)), LANGUAGE_METRICS)


def process_results_markers(doc, results):
    return fan_out(record(doc, _first(results)), MARKERS_METRICS)


def process_results_real(doc, results):
    return fan_out(record(doc, _first(results)), REAL_METRICS)


def process_results_icl(doc, results):
    return fan_out(record(doc, _first(results), icl=True), ICL_METRICS)


# ---------------------------------------------------------------------------------------------
# write_out: rendered prompts and images for a person to check before a run
# ---------------------------------------------------------------------------------------------


def write_out(docs: datasets.Dataset, out_dir: str | Path, n: int = 10, icl: bool = False) -> Path:
    """Write the first ``n`` docs' prompts (prompts.txt) and images (<k>_<i>.png) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(min(n, len(docs))):
        doc = docs[k]
        text = doc_to_text_icl(doc) if icl else doc_to_text(doc)
        visuals = doc_to_visual_icl(doc) if icl else doc_to_visual(doc)
        for i, image in enumerate(visuals, 1):
            image.save(out / f"{k:03d}_{i}.png")
        lines += [f"## {k:03d} {doc['question_id']} (gt {doc['gt_position']})", text, ""]
    (out / "prompts.txt").write_text("\n".join(lines), encoding="utf-8")
    return out
