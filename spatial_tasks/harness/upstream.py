"""lmms-eval code our tasks and models reuse: (7) its answer readers and its prompt and image
functions for the re-split tasks, (8) its
Qwen2.5-VL model, which ``qwen2_5_vl_yesno`` extends, and (9) its Qwen3-VL, Gemma 3 and LLaVA-HF
models, which the other ``*_yesno`` twins extend, and (10) its --model_args splitter."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from spatial_tasks.models.model_table import MODEL_TABLE

# ------------------------------------------------------------------------------------------
# 7. lmms-eval's own answer readers


def embspatial_answer_letter(response: str) -> str:
    """lmms-eval's ``embspatial`` task's letter reader (empty when it finds none)."""
    from lmms_eval.tasks.embspatial.utils import _extract_answer_letter

    return _extract_answer_letter(response) or ""


def cv_bench_answer_letter(response: str) -> str:
    """lmms-eval's ``cv_bench`` task's letter reader (empty when it finds none)."""
    from lmms_eval.tasks.cv_bench.utils import _extract_answer_letter

    return _extract_answer_letter(response) or ""


# Its ``embspatial`` and ``cv_bench`` tasks' prompt and image functions, called through: importing
# them imports lmms-eval's whole task package (~5 s), which a command that only reads our task
# configs in full (``spatial-tasks list``, the report's page) would pay for nothing.

def embspatial_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    from lmms_eval.tasks.embspatial.utils import embspatial_doc_to_text as upstream

    return upstream(doc, lmms_eval_specific_kwargs)


def embspatial_doc_to_visual(doc: dict) -> list:
    from lmms_eval.tasks.embspatial.utils import embspatial_doc_to_visual as upstream

    return upstream(doc)


def embspatial_doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list:
    from lmms_eval.tasks.embspatial.utils import embspatial_doc_to_messages as upstream

    return upstream(doc, lmms_eval_specific_kwargs)


def cv_bench_doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    from lmms_eval.tasks.cv_bench.utils import cv_bench_doc_to_text as upstream

    return upstream(doc, lmms_eval_specific_kwargs)


def cv_bench_doc_to_visual(doc: dict) -> list:
    from lmms_eval.tasks.cv_bench.utils import cv_bench_doc_to_visual as upstream

    return upstream(doc)


# ------------------------------------------------------------------------------------------
# 8. lmms-eval's Qwen2.5-VL model, which ``qwen2_5_vl_yesno`` extends


# What qwen2_5_vl_yesno uses of lmms-eval's Qwen2_5_VL besides the public lmms API.
QWEN2_5_VL_MEMBERS = ("model", "tokenizer", "device", "_encode_image_data_url")


def lmms_eval_qwen2_5_vl() -> tuple[type, Callable]:
    """(lmms-eval's ``Qwen2_5_VL`` class, the ``process_vision_info`` its generate_until uses):
    ``qwen2_5_vl_yesno`` builds its prompts exactly as that model does, so it extends it."""
    from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL, process_vision_info

    return Qwen2_5_VL, process_vision_info


# ------------------------------------------------------------------------------------------
# 9. lmms-eval's other transformers-native models, which the other ``*_yesno`` twins extend

# lmms-eval model modules with a ``<id>_yesno`` twin (``models.model_table``: each entry's ``extends``)
YESNO_TWINS = tuple(entry.extends for entry in MODEL_TABLE.values() if entry.extends)


def lmms_eval_model_module(name: str):
    """lmms-eval's ``lmms_eval.models.simple.<name>`` module (one of ``YESNO_TWINS``): its model
    class, and the constants its generate_until builds prompts with."""
    if name not in YESNO_TWINS:
        raise ValueError(f"no *_yesno twin relies on lmms-eval's {name!r} model")
    return importlib.import_module(f"lmms_eval.models.simple.{name}")


def split_model_args(arg_string: str) -> list[str]:
    """--model_args split into its ``name=value`` pieces exactly as lmms-eval splits them (commas
    inside quotes or braces stay: JSON values), so ``models.arguments`` sees each piece it parses."""
    from lmms_eval.utils import _smart_comma_split

    return _smart_comma_split(arg_string) if arg_string else []
