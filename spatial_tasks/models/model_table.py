"""Every ``--model`` id of ours, one entry each: the class lmms-eval builds for it, the model families it
serves and the scoring paths whose hooks it implements. Every other list of ids is derived from it
(``harness.MODELS``, the lmms-eval models the ``*_yesno`` twins extend, ``arguments.model_id``), and
``spatial-tasks list --models`` prints it as id x family -> the paths offered. It imports no torch."""

from __future__ import annotations

from dataclasses import dataclass

from spatial_tasks.models.family_table import (
    FAMILY_TABLE,
    GROUPED,
    ONE_BY_ONE,
    PACKED,
    PADDED,
    PREPARED_ONCE,
    SHARED_PREFIX,
)

ANY_FAMILY = "any"  # a model id that loads any transformers image-text checkpoint (its families: the table's)
ENGINE = "engine"  # one that leaves the model to an engine (vLLM, a server): the engine says what it serves


@dataclass(frozen=True)
class ModelEntry:
    id: str  # --model
    host: str  # module.Class that lmms-eval builds
    families: tuple[str, ...] | str = ()  # the model_types it serves, or ANY_FAMILY / ENGINE
    paths: tuple[str, ...] = ()  # the scoring paths whose hooks it implements (first-token scorers)
    extends: str | None = None  # lmms-eval's own model it is the first-token twin of (lmms_eval.models.simple.<>)

    def served(self) -> tuple[str, ...]:
        """The families it serves by name (ANY_FAMILY: every family of the table; ENGINE: none by name)."""
        if self.families == ANY_FAMILY:
            return tuple(FAMILY_TABLE)
        return () if self.families == ENGINE else tuple(self.families)

    def offered(self, model_type: str) -> tuple[str, ...]:
        """The paths a run of this id offers on a checkpoint of ``model_type``: those the family allows
        (fastest first) that this id implements; a family not in the table allows padded and one by one."""
        row = FAMILY_TABLE.get(model_type)
        allowed = row.paths if row else (PADDED, ONE_BY_ONE)
        return tuple(p for p in allowed if p in self.paths)


_MODELS = "spatial_tasks.models"
MODEL_TABLE: dict[str, ModelEntry] = {e.id: e for e in (
    ModelEntry("spatial_baseline", f"{_MODELS}.baseline.SpatialBaseline"),
    ModelEntry("qwen2_5_vl_yesno", f"{_MODELS}.yesno_scoring.Qwen2_5_VLYesNo", ("qwen2_5_vl",),
               (PACKED, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE), extends="qwen2_5_vl"),
    # hf_yesno implements every hook generically (a Hub-code adapter: one by one)
    ModelEntry("hf_yesno", f"{_MODELS}.hf_yesno.HFYesNo", ANY_FAMILY, (PACKED, PREPARED_ONCE, GROUPED, PADDED, ONE_BY_ONE)),
    ModelEntry("qwen3_vl_yesno", f"{_MODELS}.lmms_yesno.Qwen3_VLYesNo", ("qwen3_vl", "qwen3_vl_moe"),
               (GROUPED, PADDED, ONE_BY_ONE), extends="qwen3_vl"),
    ModelEntry("gemma3_yesno", f"{_MODELS}.lmms_yesno.Gemma3YesNo", ("gemma3",), (PADDED, ONE_BY_ONE), extends="gemma3"),
    # lmms-eval's llava_hf loads every LLaVA variant; LLaVA-OneVision is the family of ours it serves
    ModelEntry("llava_hf_yesno", f"{_MODELS}.lmms_yesno.LlavaHfYesNo", ("llava_onevision",), (PADDED, ONE_BY_ONE),
               extends="llava_hf"),
    ModelEntry("openai_yesno", f"{_MODELS}.openai_yesno.OpenAIYesNo", ENGINE),
    ModelEntry("vllm_yesno", f"{_MODELS}.vllm_yesno.VLLMYesNo", ENGINE),
)}

_BY_HOST = {e.host: e for e in MODEL_TABLE.values()}


def entry_of(cls: type) -> ModelEntry | None:
    """The entry whose host is ``cls`` or one of its bases (a test's subclass keeps its parent's id)."""
    return next((_BY_HOST[f"{k.__module__}.{k.__qualname__}"] for k in cls.__mro__
                 if f"{k.__module__}.{k.__qualname__}" in _BY_HOST), None)


def table_lines() -> list[str]:
    """``spatial-tasks list --models``: each id, and per family it serves the paths it offers, fastest first."""
    lines = []
    for e in MODEL_TABLE.values():
        if not e.paths:
            what = "the engine's own scoring" if e.families == ENGINE else "no model: rules"
            lines.append(f"{e.id}: {what}")
            continue
        for model_type in e.served():
            lines.append(f"{e.id} x {model_type}: {', '.join(e.offered(model_type))}")
        if e.families == ANY_FAMILY:
            lines.append(f"{e.id} x any other image-text family: {', '.join(e.offered(''))}")
    return lines
