"""O3-D's ICL + CoT task: two worked demonstrations (one target-near, one target-far image with
the query's cues) before each query."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import datasets
import pyarrow as pa
from loguru import logger as log

from spatial_tasks.common.origin import fingerprint
from spatial_tasks.o3d.prompts import (
    correct_letter,
    cot_answer,
    demonstration_question,
    parse_prompt,
    stable_seed,
)

# What a demonstration needs to be shown (load.image_for) and answered.
_DEMO_FIELDS = ("subset_name", "image_name", "subset_row", "image_column", "draw_markers", "is_marked")
DEMO_TYPE = pa.struct([("subset_name", pa.string()), ("image_name", pa.string()), ("subset_row", pa.int64()),
                       ("image_column", pa.string()), ("draw_markers", pa.bool_()), ("is_marked", pa.bool_()),
                       ("position", pa.string()), ("question", pa.string())])


def attach_demonstrations(docs: datasets.Dataset, seed: int = 0) -> datasets.Dataset:
    """Add ``icl_demos`` to every doc: one target-near and one target-far image with exactly the
    query's cues (another image, the query's marking), in a random order, each with its own
    question freshly drawn at the query's clarity (prompts.demonstration_question; never the
    query's text); choices and order are seeded by ``seed`` and the question id, so every run shows
    the same prompts. Queries whose cue set has no other near or far image are dropped (logged)."""
    table = docs.with_format("arrow")[:]
    cols = {c: table.column(c).to_pylist()
            for c in (*_DEMO_FIELDS, "cues", "gt_position", "question_id", "source", "question")}
    pool: dict[tuple, dict[str, dict[str, dict]]] = defaultdict(lambda: {"near": {}, "far": {}})
    for i in range(table.num_rows):
        if cols["gt_position"][i] in ("near", "far"):
            key = (cols["source"][i], tuple(cols["cues"][i]), cols["is_marked"][i])
            image = (cols["subset_name"][i], cols["image_name"][i])
            pool[key][cols["gt_position"][i]].setdefault(image, {f: cols[f][i] for f in _DEMO_FIELDS})
    keep: list[int] = []
    demos: list[list[dict]] = []
    for i in range(table.num_rows):
        key = (cols["source"][i], tuple(cols["cues"][i]), cols["is_marked"][i])
        own = (cols["subset_name"][i], cols["image_name"][i])
        rng = random.Random(stable_seed("o3d-icl-cot", seed, cols["question_id"][i]))
        chosen = []
        for position in ("near", "far"):
            candidates = [img for name, img in sorted(pool[key][position].items()) if name != own]
            if not candidates:
                break
            question = demonstration_question(cols["question"][i], (cols["question_id"][i], position), seed)
            chosen.append({**rng.choice(candidates), "position": position, "question": question})
        if len(chosen) != 2:
            continue
        rng.shuffle(chosen)
        keep.append(i)
        demos.append(chosen)
    dropped = table.num_rows - len(keep)
    if dropped:
        log.warning(f"o3d_icl_cot: {dropped} of {table.num_rows} questions have no other near/far image "
                    "with the same cues for the demonstrations; left out")
    out = table.take(pa.array(keep, type=pa.int64())).append_column("icl_demos", pa.array(demos, pa.list_(DEMO_TYPE)))
    return datasets.Dataset(out, fingerprint=f"{fingerprint(docs)}-icl{seed}"[:64])


def demonstration_doc(doc: Mapping[str, Any], demo: Mapping[str, Any]) -> dict:
    """A doc-like mapping of one demonstration image (enough for ``load.image_for``)."""
    return {"source": doc["source"], **{f: demo[f] for f in _DEMO_FIELDS}}


def demonstration_answer(doc: Mapping[str, Any], demo: Mapping[str, Any]) -> str:
    """The worked CoT answer of a demonstration to its own question (that question's correct letter)."""
    tags = parse_prompt(demo["question"])
    if tags is None:
        raise ValueError(f"o3d_icl_cot: a demonstration question of {doc['question_id']!r} is not in the official "
                         f"form: {demo['question']!r}")
    return cot_answer(doc["cues"], demo["position"], correct_letter(tags, demo["position"]))
