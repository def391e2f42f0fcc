"""DORI rules for ``spatial_baseline`` (``--model spatial_baseline --model_args rule=NAME``).

* ``oracle``   -- the correct option, as a model would write it (letter, text, a reason): accuracy 1
  and soft accuracy 1 on every task, which checks that options, order, parsing and scoring agree;
* ``always_a`` -- always the first shown option: accuracy = the share of questions whose answer
  the seeded order shows first (``metrics.expected_always_first``; about mean(1/n) on average).
"""

from __future__ import annotations

from collections.abc import Mapping

from spatial_tasks.common.baseline_rules import rule
from spatial_tasks.common.choice import LETTERS
from spatial_tasks.dori.records import answer_position, shown_options


@rule("dori", "oracle")
def oracle(doc: Mapping) -> str:
    position = answer_position(doc)
    return f"{LETTERS[position]}. {shown_options(doc)[position]}\nReason: this is the recorded ground truth."


@rule("dori", "always_a")
def always_a(doc: Mapping) -> str:
    return "A"
