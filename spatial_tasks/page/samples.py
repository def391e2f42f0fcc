"""The sample browser's rows: every logged question of every run, as the model saw and answered it.

One row per logged sample: the run and task, the doc id, the prompt as sent (lmms-eval's
``input``), the answer (the text, or for a first-token payload p(Yes) = σ(l_Yes − l_No), the logit
difference and the label mass), the benchmark's view of the re-scored record (``Benchmark.browse``:
the question's key across runs, the gold answer, right or wrong, its own fields) and its images
(``images.ImageShelf``). The records are re-scored with the same function as the report's figures,
so the page's right/wrong is the figures'. Strings repeated across runs (prompts, gold answers,
keys) are stored once in a string table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spatial_tasks.benchmark import Benchmark, SampleView
from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import first_response
from spatial_tasks.common.yesno import decode_payload_fields, payload_label_mass, sigmoid
from spatial_tasks.page.images import ImageShelf

MAX_TEXT = 4000  # characters of an answer or prompt kept (the rest is said, not shown)


class Strings:
    """A table of distinct strings; rows hold their index."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.table)
            self.table.append(text)
        return index


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def answer_of(response: str) -> dict:
    """The answer as the page shows it: {"text"} for a text answer; for a first-token payload also
    "p_yes" (σ(l_Yes − l_No)), "margin" (l_Yes − l_No) and "mass" (the label mass, when logged)."""
    fields = decode_payload_fields(response)
    if fields is None:
        return {"text": _cut(response)}
    margin = fields["logit_yes"] - fields["logit_no"]
    valid, mass = payload_label_mass(fields)
    out = {"text": _cut(str(fields.get("answer") or fields.get("text") or "")),
           "p_yes": sigmoid(margin), "margin": margin}  # NaN / inf: embedded as null, shown as n/a
    if "label_mass" in fields:
        out["mass"] = mass if valid else None
    return out


def generic_view(record: Mapping[str, Any], sample: Mapping[str, Any]) -> SampleView:
    """The view of a benchmark without its own (``Benchmark.browse`` None)."""
    key = record.get("question_id", sample.get("doc_id"))
    correct = record.get("correct", record.get("score"))
    return SampleView(key=str(key), gold=_text(sample.get("target")),
                      correct=float(correct) >= 1 if isinstance(correct, (int, float)) else None)


class RowJSON(str):
    """One sample row, already encoded as the page embeds it (``page.embed``): a row is kept as its
    JSON text, not as Python dicts -- a report over 100,000 samples would otherwise hold ~8 KB of
    objects per row (measured: 860 MB) for a page that needs ~0.4 KB of text."""


def encoded_row(row: Mapping[str, Any]) -> RowJSON:
    from spatial_tasks.page import script_safe_json

    return RowJSON(script_safe_json(row))


def benchmark_rows(benchmark: Benchmark, runs: RunSet, run_index: Mapping[str, int], strings: Strings,
                   shelf: ImageShelf, configs: Mapping[tuple[str, str], Mapping], browsed: int = 0
                   ) -> tuple[list[RowJSON], list[str]]:
    """(rows, field names) of one benchmark's part of the run set; ``configs``: (run label, task) -> its
    results-file config; ``browsed``: the benchmark's index on the page (each row's "b")."""
    view_of = benchmark.browse
    rows: list[RowJSON] = []
    field_names: dict[str, None] = {}
    for entry in runs.tasks:
        run, task = entry.run, entry.task
        records = entry.records()
        samples = [sample for _, sample in entry.file.lines()]
        if len(records) != len(samples):  # rescore keeps every sample, in order: anything else is a bug
            raise RuntimeError(f"{entry.path}: {len(records)} records re-scored from {len(samples)} samples")
        config = configs.get((run.label, task)) or {}
        for record, sample in zip(records, samples):
            view = view_of(record) if view_of is not None else generic_view(record, sample)
            response = record.get("response")
            response = response if isinstance(response, str) else first_response(sample)
            shown = shelf.shown(task, config, sample.get("doc_id"), record)
            field_names.update(dict.fromkeys(view.fields))
            rows.append(encoded_row({
                "r": run_index[run.label], "t": strings(task), "d": _text(sample.get("doc_id")),
                "k": strings(view.key), "p": strings(_cut(_text(sample.get("input")))),
                "a": answer_of(response), "g": strings(_cut(view.gold)),
                "c": None if view.correct is None else int(bool(view.correct)),
                "f": {name: strings(str(value)) for name, value in view.fields.items()},
                "i": list(shown.names), **({"x": shown.problem} if shown.problem else {}), "b": browsed}))
    return rows, list(field_names)
