"""SpatialTunnel, as the shared layers see it (``spatial_tasks.benchmark``).

Paper: Min et al., "Why Far Looks Up" (ECCV 2026). Headline figures: v and Δ = v_cons - v_ctr
(Tables 3 / 8 / 9), v_cons and v_ctr with intervals in its own tables.
"""

from __future__ import annotations

from pathlib import Path

from spatial_tasks.benchmark import Benchmark, Demo, distinct
from spatial_tasks.spatialtunnel.metrics import SCORECARD
from spatial_tasks.spatialtunnel.records import PROTOCOLS

NAME = "spatialtunnel"


def records_from_samples(path: Path, protocol: str = "auto") -> list[dict]:
    from spatial_tasks.spatialtunnel.rescore import records_from_samples as read

    return read(path, protocol)


def score(reference: dict, prediction: str, protocol: str = "auto") -> dict:
    """One question's record: its logged record (or doc) and the model's output; ``protocol``
    auto takes the record's own, and for a doc logit when the output is a first-token payload."""
    from spatial_tasks.common.yesno import is_payload
    from spatial_tasks.spatialtunnel.records import LoggedRecord, exact_match_record, logit_record

    LoggedRecord.model_validate(reference)
    chosen = protocol if protocol != "auto" else reference.get("protocol") or ("logit" if is_payload(prediction)
                                                                                else "exact")
    if chosen not in ("logit", "exact"):
        raise ValueError(f"protocol must be auto, exact or logit, not {protocol!r}")
    return (logit_record if chosen == "logit" else exact_match_record)(reference, [prediction])


def summary(records: list[dict], protocol: str = "auto") -> dict:
    from spatial_tasks.spatialtunnel.metrics import summary as figures

    return figures(records)


# Which paper table a task's figures are: (protocol, variant) -> table.
TABLES = {("logit", "phase"): "table3", ("exact", "phase"): "table8", ("logit", "size"): "table9"}


def paper_figures(per_task: dict[str, list[dict]]) -> list[tuple[str, str, dict]]:
    """Per task: logit on the phase variant -> Table 3, exact match -> Table 8, logit on size -> Table 9."""
    from spatial_tasks.spatialtunnel.metrics import summary as figures

    out = []
    for task, records in per_task.items():
        kinds = {(r.get("protocol"), r.get("variant")) for r in records}
        if len(kinds) == 1 and (kind := kinds.pop()) in TABLES:
            out.append((TABLES[kind], task, figures(records)))
    return out


def report(entries: list, out: Path):
    from spatial_tasks.spatialtunnel.report import spatialtunnel_figures

    return spatialtunnel_figures(entries, out)


def inspect_split(ds, name: str, files=(), root: Path | None = None) -> str:
    from spatial_tasks.spatialtunnel.inspect import read_split

    return read_split(ds, name, root)


def custom_data(request) -> dict | None:
    from spatial_tasks.spatialtunnel.custom_task import data_spec

    return data_spec(request)


PROBE_COLUMNS = {"coh_h": "Coh_H", "coh_v": "Coh_V", "coh_d": "Coh_D", "vd_ei": "VD-EI"}


def study_figures(root: Path) -> list[tuple[Path, str, str, str, dict]]:
    """Every ``spatial-tasks probe`` folder under ``root``: Table 5 at the layer its metrics.json
    reports. A metrics.json that cannot be read, or is not shaped as the probe writes it, is named."""
    from spatial_tasks.common.jsonfile import read_json_object
    from spatial_tasks.common.samples import SamplesError
    from spatial_tasks.spatialtunnel.probe.run import METRICS

    out = []
    for metrics_file in sorted(Path(root).rglob(METRICS)):
        data = read_json_object(metrics_file, "a probe's metrics.json", SamplesError)
        at_layer, layer = data.get("at_layer"), data.get("layer")
        if not isinstance(data.get("model"), str) or not (layer is None or type(layer) is int) \
                or not (at_layer is None or isinstance(at_layer, dict)):
            raise SamplesError(f"{metrics_file}: not a probe's metrics.json (expected \"model\" text, \"layer\" a "
                               "number or null, \"at_layer\" an object or null); rerun `spatial-tasks probe` on its "
                               "folder to rewrite it")
        figures = {column: at_layer.get(key) for column, key in PROBE_COLUMNS.items()} if at_layer else {}
        bad = [column for column, value in figures.items() if value is not None and not _is_number(value)]
        if bad:
            raise SamplesError(f"{metrics_file}: at_layer: {', '.join(bad)} is not a number")
        out.append((metrics_file.parent, data["model"], "table5", f"probe, layer {layer}",
                    {column: figures.get(column) for column in PROBE_COLUMNS}))
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def probe_section(folders: list[Path], out: Path):
    from spatial_tasks.spatialtunnel.probe.report import probe_section as section

    return section(folders, out)


def _probe_study(model_dir: Path, out: Path) -> Path:
    """``spatial-tasks probe`` of the tiny model on the bundled probing pairs (replaced on a rerun)."""
    from spatial_tasks.models.hidden_states import load_hidden_state_model
    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs
    from spatial_tasks.spatialtunnel.probe.run import run_probe

    pairs = load_probe_pairs(benchmark_tasks_dir(NAME) / "sample" / "contrastive_probing")
    run_probe(lambda: load_hidden_state_model(str(model_dir), device="cpu", dtype="float32"), pairs, out,
              model_name=model_dir.name, batch_size=8, overwrite=True)
    return out


DEMO = Demo(
    tasks="spatialtunnel_sample,spatialtunnel_logit_sample",
    rules=("vertical", "size", "always_yes", "oracle"),
    model_tasks="spatialtunnel_sample",
    logit_tasks="spatialtunnel_logit_sample",
    sample_note="`tasks/spatialtunnel/sample`: 64 phase + 22 size Blender renders at 128 px",
    notes=(
        "SpatialTunnel `rule=oracle` → v = 1: right answers are scored right, under both protocols.",
        "SpatialTunnel `rule=always_yes` → v = 0.5: the four questions per image are polarity balanced.",
        "SpatialTunnel `rule=vertical` (\"higher in the image ⇒ farther\", the shortcut the tunnel breaks) → "
        "v_cons = 1, v_ctr = 0, Δ = +1: the consistent/counter split is computed from the real pixel positions.",
        "SpatialTunnel `rule=size` (\"larger ⇒ nearer\") → v_s010 = 1, v_s030 = 0: the size sweep is scored right.",
        "Contrastive probing (`spatial-tasks probe`, the tiny model on `tasks/spatialtunnel/sample/contrastive_probing`: "
        "24 pairs rendered by the generator's probing variant) → the real hidden-state path runs end to end; its "
        "coherences are noise.",
    ),
    study=_probe_study,
)

BENCHMARK = Benchmark(
    name=NAME,
    title="SpatialTunnel",
    default_source="cubec/spatialtunnel",  # the authors' tables (the task YAMLs' dataset_path)
    record="spatial_tasks.spatialtunnel.records:LoggedRecord",
    records_from_samples=records_from_samples,
    score=score,
    summary=summary,
    options=("protocol",),
    option_values={"protocol": PROTOCOLS},
    scorecard=SCORECARD,
    paper=NAME,
    paper_figures=paper_figures,
    report=report,
    inspect_split=inspect_split,
    baselines="spatial_tasks.spatialtunnel.baselines",
    prompt_kind=lambda doc: doc.get("template_id"),
    custom_data=custom_data,
    study_figures=study_figures,
    study_section=("SpatialTunnel: contrastive probing (§5)", probe_section),
    commands="spatial_tasks.spatialtunnel.commands",
    demo=DEMO,
    settings=lambda records: distinct(records, "protocol"),
)
