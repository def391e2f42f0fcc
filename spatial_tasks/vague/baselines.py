"""VAGUE rules for ``spatial_baseline`` (``--model spatial_baseline --model_args rule=NAME``).

* ``oracle``: the gold letter (MCQ tasks) or the correct intention itself (free-form): accuracy 1,
  BLEU-1 1, BERTScore F1 1 -- options, order, parsing and scoring agree;
* ``fake_scene`` / ``superficial`` / ``nonexistent``: always the option of that wrong type, so
  fs_rate / su_rate / ne_rate = 1 (the failure-type columns are computed from the right options);
* ``refuse``: "I don't know." -- accuracy 0, declined 1 (the denominator is all items).

In the Socratic tasks the rule answers both rounds the same way: its "caption" is its answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from spatial_tasks.common.baseline_rules import rule
from spatial_tasks.vague.schema import FAKE_SCENE, NONEXISTENT, SURFACE


def _is_freeform(task: str) -> bool:
    return "freeform" in task


def _letter_of(doc: Mapping, kind: str) -> str:
    return doc["letters"][list(doc["option_types"]).index(kind)]


@rule("vague", "oracle")
def oracle(doc: Mapping, task: str = "") -> str:
    return doc["correct_intention"] if _is_freeform(task) else doc["answer"]


def _wrong(kind: str):
    def answer(doc: Mapping, task: str = "") -> str:
        if _is_freeform(task):
            return doc["option_texts"][list(doc["option_types"]).index(kind)]
        return _letter_of(doc, kind)

    return answer


rule("vague", "fake_scene")(_wrong(FAKE_SCENE))
rule("vague", "superficial")(_wrong(SURFACE))
rule("vague", "nonexistent")(_wrong(NONEXISTENT))


@rule("vague", "refuse")
def refuse(doc: Mapping, task: str = "") -> str:
    return "I don't know."
