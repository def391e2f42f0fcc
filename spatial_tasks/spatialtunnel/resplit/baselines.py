"""``spatial_baseline`` rules for the re-split tasks (docs from resplit.docs.resplit_docs).

* ``vertical``: the "higher ⇒ farther" shortcut itself -- for a far question the option whose
  box is highest in the image, for a close question the lowest. It scores 1 on consistent and 0
  on counter questions: Δ = 1 is the most a model can lean on the shortcut.
* ``oracle``: the correct letter.
"""

from __future__ import annotations

from spatial_tasks.common.baseline_rules import rule
from spatial_tasks.spatialtunnel.resplit.metrics import BENCHMARK


def _gold_index(doc: dict) -> int:
    if doc["resplit_source"] == "embspatial":
        return int(doc["answer"])
    return ord(str(doc["answer"]).strip("()").upper()) - 65


@rule(BENCHMARK, "oracle")
def oracle(doc: dict) -> str:
    return chr(65 + _gold_index(doc))


@rule(BENCHMARK, "vertical")
def vertical(doc: dict) -> str:
    boxed = [(row, i) for i, row in enumerate(doc["option_rows"]) if row is not None]
    if not boxed:
        return "I cannot tell."
    _, index = min(boxed) if doc["asks_far"] else max(boxed)
    return chr(65 + index)
