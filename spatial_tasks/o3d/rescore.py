"""Re-score the O3-D authors' released raw model outputs and rebuild the paper's Table 12.

Input: JSON lines (plain or gzip) in the released-outputs schema (tasks/o3d/README.md, "Released outputs"; tests/o3d/data):
one record per (model, image, question) with the raw ``answer``, the exact question ``ques``,
``gt_position``, ``cues``, ``cue_strength`` (+ ``cue_strength_source``), ``ques_clarity``,
``is_marked``, ``icl``, ``image_family``, ``notebook_lists``, ``orig_image_name`` ...

Row selections of the Table 12 cells (all need ``notebook_lists`` non-empty = a file the paper's
notebook used; rows with ``gt_position`` "none" are never scored):

========= =================================================================================
HP ... FS image_family kb-1cue, marked, clarity 4, the one cue, ALL strengths, ICL rows kept
sim0..2   kb-0cue / kb-1cue / kb-2cue / kb-2cue-fsoc, clarity 4, icl not true, by number of
          cues; 1 and 2 cues at regular strength only (0.9 <= s <= 1.0)
real0..2  o3dcf-real (cropped real photos), marked, clarity 4; 1 and 2 cues regular strength
========= =================================================================================

Cue strengths: the release has ``cue_strength`` null for kb-1cue (``cue_strength_source``
"inferred-timestamp-pair-parity") and for the single-strength sets ("single-strength-set":
FS, the 2-cue sets). Each kb-1cue scene was rendered at strength 1 and then at strength 2, so
within one (family, cue, target position) the images sorted by their timestamped name alternate
1, 2, 1, 2 ...; single-strength sets are regular (1.0). The inference needs all images of a
family in the input (it is done over the union of every model's rows). It is what makes sim1
match the paper for all five models (the opposite parity misses by up to 0.03), and FS must
count as regular strength there.

kb-0lp (HP and HP pairs on textureless ground, "no linear perspective") is in none of the
Table 12 cells, although the paper's image counts (13,746 single-cue = 13,598 kb-1cue + 148
kb-0lp; 21,556 two-cue) include it: adding it moves HP and sim1 off the paper's values.

Beyond Table 12 (per model): near-far bias (Eq. 1), SDGM vision / language (Eq. 2) and the
modified SDGM per variation type (Eq. 3) over the SDGM population of ``metrics`` (regular
strength, no ICL, clarity >= 3) drawn from the cue-controlled sets kb-1cue, kb-2cue and
kb-2cue-fsoc, and the share of unparseable answers over all of a model's rows (the README's
0.4 % / 1.9 % are over all rows). The release has no kb-2cue rows for InternVL2.5 and LLaVA1.5,
so their vision SDGM has 9 groups (8 single cues + FS+OC), not 36: ``n["sdgm_vision"]`` says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import iter_json_lines
from spatial_tasks.common.stats import is_defined, share
from spatial_tasks.o3d import metrics
from spatial_tasks.o3d.parse import UNPARSEABLE, is_correct, parse_answer
from spatial_tasks.o3d.prompts import parse_prompt
from spatial_tasks.o3d.schema import CLARITY_LEVELS, CUE_CODES, SchemaError, literal

RELEASED_FORMAT = "o3d-released"
SAMPLES_FORMAT = "lmms-samples"

CUE_COLUMNS = metrics.VISION_CUES
NUM_CUE_COLUMNS = ("sim0", "sim1", "sim2", "real0", "real1", "real2")
TABLE12_COLUMNS = (*CUE_COLUMNS, *NUM_CUE_COLUMNS)
SYNTHETIC_FAMILIES = ("kb-0cue", "kb-1cue", "kb-2cue", "kb-2cue-fsoc")
REAL_TABLE12_FAMILY = "o3dcf-real"
REAL_FAMILIES = frozenset({"o3d-real", "o3dcf-real", "o3-dorder"})  # real-012cue, its crops, real-mcue
# The cue-controlled synthetic sets of the bias / SDGM analysis (not kb-0lp, the separate
# "height in plane without linear perspective" experiment, nor 0-cue images).
SDGM_FAMILIES = frozenset({"kb-1cue", "kb-2cue", "kb-2cue-fsoc"})
INFERRED_STRENGTH_SOURCES = frozenset({"inferred", "inferred-timestamp-pair-parity"})
SINGLE_STRENGTH_SOURCES = frozenset({"single-strength-set"})
REQUIRED_FIELDS = ("model", "image_family", "ques", "answer", "gt_position", "cues", "ques_clarity")
CLARITY_VALUES = frozenset(CLARITY_LEVELS)

# Paper Table 12 (accuracy) lives in tasks/o3d/paper_results.yaml. sim2 and overall are not
# reproducible from the release: its 2-cue marked result files are missing (our sim2 has only the
# FS+OC pair) and the paper's real half of "Overall" pooled rows that cannot be recovered.
REPRODUCIBLE_COLUMNS = (*CUE_COLUMNS, "sim0", "sim1", "real0", "real1", "real2")


class ReleasedFormatError(UserError, ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """RELEASED_FORMAT or "lmms-samples" for a file or folder, from its name or first record."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir() or "_samples_" in path.name or path.name.endswith("_results.json"):
        return SAMPLES_FORMAT
    for _, row in iter_json_lines(path, ReleasedFormatError):
        if "doc_id" in row:
            return SAMPLES_FORMAT
        if {"ques", "answer"} <= row.keys():
            return RELEASED_FORMAT
        break
    raise ReleasedFormatError(f"{path}: neither the O3-D released-outputs schema (model, ques, answer, ...) nor "
                              "lmms-eval samples (doc_id, ...); pass --format")


def iter_released(path: str | Path) -> Iterator[dict]:
    """The raw records of a released-outputs file (gzip or plain JSON lines), streamed; every
    field the scoring reads is checked (an error names the file, line and field)."""
    path = Path(path)
    if path.is_dir():
        raise ReleasedFormatError(f"{path}: is a folder; O3-D released outputs are one JSON-lines file "
                                  "(for lmms-eval output use --format lmms-samples)")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected O3-D released outputs, JSON lines)")
    for lineno, row in iter_json_lines(path, ReleasedFormatError):
        where = f"{path}:{lineno}"
        missing = [f for f in REQUIRED_FIELDS if f not in row]
        if missing:
            raise ReleasedFormatError(f"{where}: missing field(s) {missing} of the {RELEASED_FORMAT} schema")
        row["cues"] = _cue_list(row["cues"], where)
        _check_released_row(row, where)
        yield row


def _check_released_row(row: dict, where: str) -> None:
    for field in ("model", "image_family"):
        if not isinstance(row[field], str) or not row[field]:
            raise ReleasedFormatError(f"{where}: field {field!r} must be a non-empty string, got {row[field]!r}")
    if row["gt_position"] not in ("near", "far", "none"):
        raise ReleasedFormatError(f"{where}: field 'gt_position' must be near, far or none, got {row['gt_position']!r}")
    unknown = [c for c in row["cues"] if c not in CUE_CODES]
    if unknown:
        raise ReleasedFormatError(f"{where}: field 'cues': unknown cue code(s) {unknown}")
    clarity = row["ques_clarity"]
    if clarity is not None and (isinstance(clarity, bool) or not isinstance(clarity, (int, float))
                                or float(clarity) not in CLARITY_VALUES):
        raise ReleasedFormatError(f"{where}: field 'ques_clarity' must be one of {sorted(CLARITY_VALUES)}, "
                                  f"got {clarity!r}")
    strength = row.get("cue_strength")
    if strength is not None and (isinstance(strength, bool) or not isinstance(strength, (int, float))
                                 or not math.isfinite(strength) or strength < 0):
        raise ReleasedFormatError(f"{where}: field 'cue_strength' must be a finite number >= 0, got {strength!r}")


def _cue_list(value: object, where: str) -> list[str]:
    """The cue codes of a row: a JSON list, or the Hub's string repr "['HP', 'SA']"; None = []."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = literal(value, "cues") if value.strip() else []
        except SchemaError:
            raise ReleasedFormatError(f"{where}: cues {value[:80]!r} is not a list") from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ReleasedFormatError(f"{where}: cues {value!r} is not a list of cue codes")
    return sorted(value)


def _strength(row: dict) -> float | None:
    s = row.get("cue_strength")
    if s is not None:
        return float(s)
    if row.get("cue_strength_source") in SINGLE_STRENGTH_SOURCES:
        return 1.0
    return None


def records_from_released(path: str | Path) -> list[dict]:
    """One metric record per released row (fields of ``metrics``; plus model, image_family,
    in_paper, is_marked, answer label), cue strengths resolved as described in the module doc."""
    labels: dict[tuple[str, str], str] = {}
    tags_cache: dict[str, object] = {}
    records: list[dict] = []
    pending: list[tuple[dict, tuple, str]] = []  # (record, parity key, image name)
    names: dict[tuple, set[str]] = defaultdict(set)
    interned: dict[tuple, tuple] = {}
    for row in iter_released(path):
        answer, question = row["answer"], row["ques"]
        key = (answer, question) if isinstance(answer, str) and isinstance(question, str) else None
        label = labels.get(key) if key is not None else None
        if label is None:
            label = parse_answer(answer, question)
            if key is not None:
                labels[key] = label
        if key is None:
            tags = parse_prompt(question)
        else:
            if question not in tags_cache:
                tags_cache[question] = parse_prompt(question)
            tags = tags_cache[question]
        cues = tuple(row["cues"])
        cues = interned.setdefault(cues, cues)
        family = row["image_family"]
        gt = row["gt_position"]
        rec = {
            "model": row["model"],
            "image_family": family,
            "in_paper": bool(row.get("notebook_lists")),
            "is_marked": bool(row.get("is_marked")),
            "is_real": family in REAL_FAMILIES,
            "icl": row.get("icl") is True,
            "ques_clarity": float(row["ques_clarity"]) if row["ques_clarity"] is not None else None,
            "cues": cues,
            "cue_strength": _strength(row),
            "gt_position": gt,
            "label": label,
            "correct": is_correct(label, gt),
        }
        if tags is not None:
            rec.update(query=tags.query, order=tags.order, formality=tags.formality,
                       vocabulary=tags.vocabulary, clarity_level=tags.clarity_level)
        if rec["cue_strength"] is None and row.get("cue_strength_source") in INFERRED_STRENGTH_SOURCES:
            pkey = (family, cues, gt)
            name = row.get("orig_image_name") or row.get("image_name") or ""
            names[pkey].add(name)
            pending.append((rec, pkey, name))
        records.append(rec)
    parity = {pkey: {n: (1.0 if i % 2 == 0 else 2.0) for i, n in enumerate(sorted(group))}
              for pkey, group in names.items()}
    for rec, pkey, name in pending:
        rec["cue_strength"] = parity[pkey][name]
    return records


# ---------------------------------------------------------------------------------------------
# Table 12 cells and the per-model summary
# ---------------------------------------------------------------------------------------------


def table12_cells(rec: dict) -> list[str]:
    """The Table 12 columns that a record counts in (usually none or one; a kb-1cue row at
    regular strength counts both in its cue column and in sim1)."""
    if not rec["in_paper"] or rec["ques_clarity"] != 4.0:
        return []
    family, n = rec["image_family"], len(rec["cues"])
    out = []
    if family == "kb-1cue" and rec["is_marked"] and n == 1 and rec["cues"][0] in CUE_COLUMNS:
        out.append(rec["cues"][0])
    regular = n == 0 or metrics.is_regular_strength(rec)
    if family in SYNTHETIC_FAMILIES and not rec["icl"] and n <= 2 and regular:
        out.append(f"sim{n}")
    if family == REAL_TABLE12_FAMILY and rec["is_marked"] and n <= 2 and regular:
        out.append(f"real{n}")
    return out


def summary(records: list[dict], ddof: int = 0) -> dict:
    """Table 12 cells, near-far bias, SDGMs and unparseable share for one model's records."""
    cells: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        for cell in table12_cells(rec):
            cells[cell].append(rec)
    out: dict = {}
    n: dict = {}
    se: dict = {}
    for col in TABLE12_COLUMNS:
        acc = metrics.accuracy(cells.get(col, []))
        out[col], n[col], se[col] = acc["acc"], acc["n"], acc["se"]
    population = metrics.sdgm_population(
        [r for r in records if r["image_family"] in SDGM_FAMILIES and r["in_paper"]])
    bias = metrics.near_far_bias(population)
    vision = metrics.sdgm_vision(population, ddof, population=False)
    language = metrics.sdgm_language(population, ddof, population=False)
    out["bias_nf"] = bias["bias"]
    out["acc_near"], out["acc_far"] = bias["acc_near"], bias["acc_far"]
    out["sdgm_vision"] = vision["sdgm"]
    out["sdgm_language"] = language["sdgm"]
    out["consistency"] = 1 - language["sdgm"]  # C: the lmms-eval metric name
    out["modified_sdgm"] = metrics.modified_sdgm_all(population, ddof, population=False)
    groups = metrics.cue_group_accuracy(population, population=False)
    out["cue_group_accuracy"] = {g: a["acc"] for g, a in groups.items()}
    out["unparseable"] = share(records, lambda r: r["label"] == UNPARSEABLE)
    n["bias_nf"] = {"near": bias["n_near"], "far": bias["n_far"]}
    n["sdgm_vision"] = {"groups": vision["n_groups"], "rows": vision["n"]}
    n["sdgm_language"] = {"groups": language["n_groups"], "rows": language["n"]}
    n["all_rows"] = len(records)
    out["n"] = n
    out["se"] = se
    return out


def rescore_released(path: str | Path, ddof: int = 0, records: list[dict] | None = None) -> dict:
    """Table 12 (and the bias / SDGM figures) per model from a released-outputs file.

    Returns ``{"models": {model: {"HP": acc, ..., "FS", "sim0", "sim1", "sim2", "real0", "real1",
    "real2", "bias_nf", "sdgm_vision", "sdgm_language", "consistency", "unparseable", "n": {...}, ...}},
    ...}``; a cell without rows is NaN with n 0. ``ddof``: 0 = the paper's population standard
    deviation, 1 = the authors' pandas sample standard deviation. ``records``: the file's
    ``records_from_released``, where the caller has read them already (a command reads the release once).
    """
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (paper) or 1 (authors' pandas), not {ddof!r}")
    by_model: dict[str, list[dict]] = defaultdict(list)
    records = records_from_released(path) if records is None else records
    for rec in records:
        by_model[rec["model"]].append(rec)
    return {
        "format": RELEASED_FORMAT,
        "source": str(path),
        "rows": len(records),
        "ddof": ddof,
        "models": {m: summary(rows, ddof) for m, rows in sorted(by_model.items())},
        "not_reproducible": {
            "sim2": "the release lacks the 2-cue marked result files; only the FS+OC pair is present",
            "overall": "the paper's real half pooled rows that cannot be recovered from the release",
        },
    }


def compare_to_paper(result: dict, decimals: int = 4) -> list[dict]:
    """Every reproducible Table 12 cell of the models the paper reports: ours vs the paper,
    rounded to ``decimals``."""
    from spatial_tasks.common.paper import paper_results

    paper = paper_results("o3d")
    table = paper.tables["table12"]
    rows = []
    for model, figures in result["models"].items():
        name = paper.match(model)
        if name is None or name not in table.rows:
            continue
        for col in REPRODUCIBLE_COLUMNS:
            ours, published = figures.get(col), table.fraction(name, col)
            match = is_defined(ours) and published is not None and round(ours, decimals) == round(published, decimals)
            rows.append({"model": model, "paper_model": name, "cell": col, "ours": ours, "paper": published,
                         "match": match})
    return rows


# ---------------------------------------------------------------------------------------------
# lmms-eval --log_samples output
# ---------------------------------------------------------------------------------------------



def records_from_samples(path: Path) -> list[dict]:
    """The re-scored records of one ``*_samples_<task>.jsonl`` file (every O3-D task logs its record
    under its first metric, acc)."""
    from spatial_tasks.common.samples import rescore_file
    from spatial_tasks.o3d.records import LoggedRecord, rescored
    from spatial_tasks.o3d.schema import BENCHMARK

    def rescore_one(record: dict, sample: dict) -> dict:
        LoggedRecord.model_validate(record)
        return rescored(record)

    return rescore_file(path, ("acc",), BENCHMARK, rescore_one)


def metric_names(path: Path) -> tuple[str, ...]:
    """The metric names the file's task declared: the record is logged under the task's first metric,
    the other metric keys hold a pointer string (``tasks.RecordRef``); every sample carries the same
    keys, so the first's are read."""
    from spatial_tasks.common.samples import is_record_ref, numbered_samples
    from spatial_tasks.o3d.schema import BENCHMARK

    for _, sample in numbered_samples(path):
        return tuple(key for key, value in sample.items()
                     if (isinstance(value, dict) and value.get("benchmark") == BENCHMARK) or is_record_ref(value))
    return ()


def task_metrics(records: list[dict], names: tuple[str, ...]) -> dict:
    """The named lmms-eval metrics of one task's records (``tasks.METRICS``), plus ``n``."""
    from spatial_tasks.o3d.metric_sets import METRICS

    n_scored = sum(1 for r in records if r.get("gt_position") in ("near", "far"))
    return {**{m: METRICS[m](records) for m in names if m in METRICS}, "n": len(records), "n_scored": n_scored}


def _check_no_doc_twice(per_task: dict[str, tuple[list[dict], tuple[str, ...]]], run) -> None:
    """One run must not hold a question twice (an ICL and a plain answer are two questions): two
    tasks of one run over the same data would be counted twice in the pooled figures."""
    seen: dict[tuple, str] = {}
    for task, (records, _) in sorted(per_task.items()):
        for rec in records:
            key = (rec.get("question_id"), bool(rec.get("icl")))
            if key in seen and seen[key] != task:
                raise ValueError(f"{run.samples[task]}: question {key[0]!r} is also in {run.samples[seen[key]]} of "
                                 "the same run; its figures would count it twice -- rescore the files apart")
            seen[key] = task


def rescore_samples(runs: RunSet, ddof: int = 0) -> dict:
    """O3-D metrics re-computed from lmms-eval ``--log_samples`` output (``registry.read_runs``).

    Same structure as ``rescore_released``: ``{"models": {label: {...}}}`` with, per model (the
    run's ``--model`` and ``--model_args``):

    * the ``summary`` figures over all the run's O3-D records (Table 12 cells, bias, SDGMs
      over the paper's SDGM population, unparseable share), comparable with ``rescore_released``;
    * ``tasks``: per task, every metric the task reported in lmms-eval, same names, same values
      (each answer is re-parsed from the logged response and question);
    * ``groups``: per lmms-eval group of the run whose subtasks are all here, each metric
      recomputed on the pooled records of the subtasks that report it -- what the live group
      reports (``tasks.pool_subtasks``).

    ``ddof`` applies to the ``summary`` part; task and group metrics are the live ones
    (the paper's population standard deviation).
    """
    from spatial_tasks.o3d.metric_sets import METRICS
    from spatial_tasks.o3d.schema import BENCHMARK

    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (paper) or 1 (authors' pandas), not {ddof!r}")
    models: dict[str, dict] = {}
    ours = runs.only(BENCHMARK)
    for run in ours.runs:
        label, results = run.label, run.results()
        per_task = {entry.task: (entry.records(), entry.declared or ()) for entry in ours.of_run(run)}
        _check_no_doc_twice(per_task, run)
        tasks = {task: task_metrics(recs, names) for task, (recs, names) in sorted(per_task.items())}
        groups = {}
        for group, subtasks in sorted((results.get("group_subtasks") or {}).items()):
            if not subtasks or not all(t in per_task for t in subtasks):
                continue
            names = dict.fromkeys(m for t in subtasks for m in per_task[t][1] if m in METRICS)
            groups[group] = {m: METRICS[m]([r for t in subtasks if m in per_task[t][1] for r in per_task[t][0]])
                             for m in names}
            groups[group]["n"] = sum(len(per_task[t][0]) for t in subtasks)
        everything = [r for recs, _ in per_task.values() for r in recs]
        models[label] = {**summary(everything, ddof), "tasks": tasks, "groups": groups}
    if not models:
        raise ValueError(f"{runs.source}: no O3-D samples found (expected lmms-eval --log_samples *_samples_*.jsonl "
                         "of o3d_* tasks)")
    return {"format": SAMPLES_FORMAT, "source": runs.source, "ddof": ddof, "models": models}


FORMATS = ("auto", RELEASED_FORMAT, "lmms-samples")


def chosen_format(path: str | Path, format: str = "auto", ddof: int = 0) -> str:
    """What ``spatial-tasks rescore o3d`` reads ``path`` as: the authors' released outputs
    (``rescore_released``) or lmms-eval ``--log_samples`` output (``rescore_samples``); ``auto``
    detects which. The options are checked first."""
    if format not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, not {format!r}")
    if ddof not in (0, 1):
        raise ValueError(f"--ddof must be 0 (the paper's population std) or 1 (the authors' sample std), not {ddof}")
    return detect_format(path) if format == "auto" else format


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per run (all its O3-D tasks pooled, as ``rescore o3d`` does): Table 12's cells."""
    records = [r for rows in per_task.values() for r in rows]
    return [("table12", "run (all O3-D tasks)", summary(records))] if records else []


def release_cells(path: Path, decimals: int) -> tuple[list[dict], list[str]]:
    """Every reproducible Table 12 cell of the released models with a paper row (``compare_to_paper``)."""
    result = rescore_released(path)
    rows = [{**row, "table": "table12"} for row in compare_to_paper(result, decimals)]
    return rows, list(result["models"])
