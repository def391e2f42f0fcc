"""Which model families we score and probe, as plain data: a transformers ``model_type`` (what a
checkpoint's config.json says), its name and the scoring paths the model allows, fastest first (which
``--model`` ids serve it: ``model_table``); and the words the paths share: the six paths' names and the
two signals a path raises. It imports no torch, so the preflight reads it before a run loads anything,
and the pipelines (``packed``) and strategies (``scoring_paths``) use its words without importing each
other; ``families`` adds, per family, the code that runs it (the tiny builder, the image features,
probing's prompt)."""

from __future__ import annotations

from dataclasses import dataclass

PACKED, PREPARED_ONCE, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE = (
    "packed", "prepared_once", "shared_prefix", "grouped", "padded", "one_by_one")
ORDER = (PACKED, PREPARED_ONCE, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)


class PathUnavailable(RuntimeError):
    """These questions (``lasting``: any question of this run) cannot take this path; the reason is
    one line."""

    def __init__(self, reason: str, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


class NothingToShare(Exception):
    """A batch in which no image is asked about twice: the shared-prefix forward has nothing to save."""


BASIC_PATHS = (PADDED, ONE_BY_ONE)  # what every model allows


@dataclass(frozen=True)
class FamilyRow:
    model_type: str
    title: str
    paths: tuple[str, ...] = BASIC_PATHS


_QWEN = (PACKED, GROUPED, PADDED, ONE_BY_ONE)
_PREPARED = (PREPARED_ONCE, PADDED, ONE_BY_ONE)
FAMILY_TABLE: dict[str, FamilyRow] = {row.model_type: row for row in (
    FamilyRow("qwen2_5_vl", "Qwen2.5-VL", (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
    FamilyRow("qwen3_vl", "Qwen3-VL", _QWEN),
    FamilyRow("qwen3_vl_moe", "Qwen3-VL-MoE", _QWEN),
    FamilyRow("llava_onevision", "LLaVA-OneVision", _PREPARED),
    FamilyRow("internvl", "InternVL (-hf)", _PREPARED),
    FamilyRow("gemma3", "Gemma 3", _PREPARED),
    # Molmo2's image_token_pooling indexes its patches another way than PreparedOnce assembles rows
    FamilyRow("molmo2", "Molmo2"),
)}
