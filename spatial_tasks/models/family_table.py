"""Which model families we score and probe, as plain data: a transformers ``model_type`` (what a
checkpoint's config.json says), its name, lmms-eval's own generation model for it (scored by its
``<id>_yesno`` twin) and the scoring paths the model allows, fastest first. It imports no torch, so the
preflight reads it before a run loads anything; ``families`` adds, per family, the code that runs it
(the tiny builder, the image features, probing's prompt)."""

from __future__ import annotations

from dataclasses import dataclass

from spatial_tasks.models.scoring_terms import (
    GROUPED,
    ONE_BY_ONE,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    SHARED_PREFIX,
)

BASIC_PATHS = (PADDED, ONE_BY_ONE)  # what every model allows


@dataclass(frozen=True)
class FamilyRow:
    model_type: str
    title: str
    lmms_eval_model: str | None  # lmms-eval's own generation model for it (its ``<id>_yesno`` twin), if any
    paths: tuple[str, ...] = BASIC_PATHS


_QWEN = (PACKED, GROUPED, PADDED, ONE_BY_ONE)
_PREPARED = (PREPARED_ONCE, PADDED, ONE_BY_ONE)
FAMILY_TABLE: dict[str, FamilyRow] = {row.model_type: row for row in (
    FamilyRow("qwen2_5_vl", "Qwen2.5-VL", "qwen2_5_vl", (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)),
    FamilyRow("qwen3_vl", "Qwen3-VL", "qwen3_vl", _QWEN),
    FamilyRow("qwen3_vl_moe", "Qwen3-VL-MoE", "qwen3_vl", _QWEN),
    FamilyRow("llava_onevision", "LLaVA-OneVision", "llava_hf", _PREPARED),
    FamilyRow("internvl", "InternVL (-hf)", None, _PREPARED),
    FamilyRow("gemma3", "Gemma 3", "gemma3", _PREPARED),
    # Molmo2's image_token_pooling indexes its patches another way than PreparedOnce assembles rows
    FamilyRow("molmo2", "Molmo2", None),
)}
