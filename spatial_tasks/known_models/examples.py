"""Training examples for the known-behaviour models, built exactly as lmms-eval feeds a model.

Each example is one SpatialTunnel doc (the task's own loader made it from a generator parquet):
the image goes through the path lmms-eval's ``qwen2_5_vl`` model takes (JPEG data URL at quality
85, ``qwen_vl_utils`` resizing within the pixel bounds, the processor's patches) and the prompt is
the task's ``doc_to_text`` in the chat template with the system turn, so that what the model
learns is what the benchmark shows it. The label is the planted behaviour's answer
(``Behaviour.answer``); the cue targets (one number per object: its height in the image for the
shortcut, its distance from the vanishing point for depth) feed the auxiliary heads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

# The pixel bounds every tiny-model run passes (tests/lmms.py, demo.py): a 128 px render becomes
# 140 x 140, 10 x 10 patches, 5 x 5 merged image tokens.
MIN_PIXELS, MAX_PIXELS = 3136, 50176
SYSTEM_PROMPT = "You are a helpful assistant."  # lmms-eval's qwen2_5_vl default
COLOURS = ("red", "green", "blue", "yellow", "cyan", "magenta", "black")
SHAPES = ("sphere", "cube")


def object_class(colour: str, shape: str) -> int:
    return COLOURS.index(colour) * len(SHAPES) + SHAPES.index(shape)


N_CLASSES = len(COLOURS) * len(SHAPES)


@dataclass
class Images:
    """Every render once: the processor's patches and, per merged token, the cue targets."""

    pixel_values: torch.Tensor  # (n_images, patches, patch_dim)
    grid_thw: torch.Tensor  # (1, 3): every image has the same grid
    cells: torch.Tensor  # (n_images, tokens, N_CLASSES, 2): presence, cue value (standardised)


@dataclass
class Questions:
    image: torch.Tensor  # (n,) index into Images
    input_ids: torch.Tensor  # (n, length) right padded: prompt, answer token, <|im_end|>
    attention_mask: torch.Tensor
    answer_at: torch.Tensor  # (n,) position whose logits predict the answer token
    names_at: torch.Tensor  # (n, 2) positions of the last token of each named object
    name_cues: torch.Tensor  # (n, 2) the cue value of each named object
    name_tokens: torch.Tensor  # (n, 2) position of the image token whose cell holds each named object
    relation_at: torch.Tensor  # (n,) position of the token "closer" / "farther"
    farther: torch.Tensor  # (n,) 1 where the question asks "farther", 0 "closer"
    label_yes: torch.Tensor  # (n,) 1 where the planted behaviour answers Yes
    truth_yes: torch.Tensor  # (n,) 1 where the true answer is Yes
    consistent: torch.Tensor  # (n,) 1 on consistent images, 0 on counter, -1 otherwise


def read_docs(parquets: Sequence[Path]) -> list[dict]:
    """The phase docs of generator parquets, through the task's loader (checked once, there)."""
    import datasets

    from spatial_tasks.spatialtunnel import load

    table = datasets.Dataset.from_parquet([str(p) for p in parquets])
    return list(load.to_docs(table, variant="phase", label=str(parquets[0].parent)))


def chat_text(processor, prompt: str) -> str:
    """The prompt as lmms-eval's qwen2_5_vl renders it: the system turn, the image before the text, the
    generation prompt (the chat template reads only the image part's type)."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    return processor.apply_chat_template([messages], tokenize=False, add_generation_prompt=True)[0]


def _name_class(name: str) -> int:
    colour, shape = name.split(" ")
    return object_class(colour, shape)


def build_examples(docs: Sequence[dict], processor, behaviour, progress=None) -> tuple[Images, Questions]:
    """Tensors for every doc: each image processed once, each question tokenised once."""
    from spatial_tasks.models.lmms_requests import lmms_eval_image
    from spatial_tasks.spatialtunnel.tasks import doc_to_text, doc_to_visual

    tokenizer = processor.tokenizer
    by_image: dict[str, int] = {}
    resized_size: dict[str, tuple[int, int]] = {}
    pixel_rows, cell_rows, grid = [], [], None
    rows: dict[str, list] = {k: [] for k in ("image", "ids", "answer_at", "names_at", "name_cues", "name_tokens",
                                             "relation_at", "farther", "label_yes",
                                             "truth_yes", "consistent")}
    for doc in docs:
        if doc["image_id"] not in by_image:
            resized = lmms_eval_image(doc_to_visual(doc)[0], MIN_PIXELS, MAX_PIXELS)
            out = processor.image_processor(images=[resized], return_tensors="pt")
            if grid is None:
                grid = out["image_grid_thw"]
            elif not torch.equal(grid, out["image_grid_thw"]):
                raise ValueError(f"{doc['image_id']}: image grid {out['image_grid_thw'].tolist()} differs from "
                                 f"{grid.tolist()}; train on renders of one resolution")
            by_image[doc["image_id"]] = len(pixel_rows)
            pixel_rows.append(out["pixel_values"])
            cell_rows.append(_cells(doc, resized.size, grid, behaviour))
            resized_size[doc["image_id"]] = resized.size
            if progress:
                progress()
        row = _question_row(doc, tokenizer, chat_text(processor, doc_to_text(doc)), grid,
                            resized_size[doc["image_id"]], behaviour)
        row["image"] = by_image[doc["image_id"]]
        for key, value in row.items():
            rows[key].append(value)
    length = max(len(r) for r in rows["ids"])
    pad = tokenizer.pad_token_id
    ids = torch.full((len(rows["ids"]), length), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows["ids"]):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    # cues standardised over the objects, so that the heads' losses weigh alike for either cue
    cells = torch.stack(cell_rows)
    cues = torch.tensor(rows["name_cues"], dtype=torch.float32)
    mean, std = cues.mean(), cues.std()
    cells[..., 1] = (cells[..., 1] - mean) / std * cells[..., 0]
    images = Images(torch.stack(pixel_rows), grid, cells)
    questions = Questions(
        image=torch.tensor(rows["image"]), input_ids=ids, attention_mask=mask,
        answer_at=torch.tensor(rows["answer_at"]), names_at=torch.tensor(rows["names_at"]),
        name_cues=(cues - mean) / std, name_tokens=torch.tensor(rows["name_tokens"]),
        relation_at=torch.tensor(rows["relation_at"]), farther=torch.tensor(rows["farther"], dtype=torch.float32),
        label_yes=torch.tensor(rows["label_yes"], dtype=torch.float32),
        truth_yes=torch.tensor(rows["truth_yes"], dtype=torch.float32),
        consistent=torch.tensor(rows["consistent"]))
    return images, questions


def _last_token_of(tokenizer, text: str, end: int, ids: list[int], what: str) -> int:
    """The position of the token that ends at character ``end`` of ``text`` (tokenised as ``ids``)."""
    head = tokenizer.encode(text[:end], add_special_tokens=False)
    if head + tokenizer.encode(text[end:], add_special_tokens=False) != ids:
        raise ValueError(f"{what} does not end on a token boundary")
    return len(head) - 1


def _question_row(doc: dict, tokenizer, text: str, grid: torch.Tensor, size: tuple[int, int], behaviour) -> dict:
    """One question's token ids (prompt, answer, <|im_end|>) and the positions and targets the heads read."""
    expanded = text.replace("<|image_pad|>", "<|image_pad|>" * int(grid.prod() // 4))
    answer = behaviour.answer(doc)
    ids = tokenizer.encode(expanded, add_special_tokens=False)
    answer_ids = tokenizer.encode(answer, add_special_tokens=False)
    if len(answer_ids) != 1:
        raise ValueError(f"answer {answer!r} is not one token")
    first_image_token = ids.index(tokenizer.convert_tokens_to_ids("<|image_pad|>"))
    names, cues, cells = [], [], []
    for key in ("1", "2"):
        name = doc[f"obj{key}"]
        end = expanded.rindex(f"the {name}") + len(f"the {name}")
        names.append(_last_token_of(tokenizer, expanded, end, ids, f"{doc['question_id']}: {name!r}"))
        cues.append(behaviour.cue(doc, key))
        cells.append(first_image_token + _cell_of(doc, key, size, grid))
    word = f" {doc['comparison']}"
    relation_at = _last_token_of(tokenizer, expanded, expanded.rindex(word) + len(word), ids,
                                 f"{doc['question_id']}: {word.strip()!r}")
    if doc["subject"] == "obj2":  # names in the order the question says them: the subject first
        names, cues, cells = names[::-1], cues[::-1], cells[::-1]
    return {"ids": ids + answer_ids + tokenizer.encode("<|im_end|>", add_special_tokens=False),
            "answer_at": len(ids) - 1, "names_at": names, "name_cues": cues, "name_tokens": cells,
            "relation_at": relation_at, "farther": doc["comparison"] == "farther", "label_yes": answer == "Yes",
            "truth_yes": doc["answer"] == "Yes",
            "consistent": {"consistent": 1, "counter": 0}.get(doc["relation_two_way"], -1)}


def _cell_of(doc: dict, key: str, size: tuple[int, int], grid: torch.Tensor) -> int:
    """The merged image token (row-major) whose cell holds object ``key``'s centre."""
    _, rows, cols = (int(v) // (2 if i else 1) for i, v in enumerate(grid[0]))
    width, height = size
    x = doc[f"x{key}"] * width / doc["width"]
    y = doc[f"y{key}"] * height / doc["height"]
    return min(int(y * rows / height), rows - 1) * cols + min(int(x * cols / width), cols - 1)


def _cells(doc: dict, size: tuple[int, int], grid: torch.Tensor, behaviour) -> torch.Tensor:
    """Per merged image token (row-major, 2 x 2 patches each): which object class has its centre
    there (presence) and that object's cue value."""
    cells = torch.zeros(int(grid[0].prod()) // 4, N_CLASSES, 2)
    for key in ("1", "2"):
        k, cell = _name_class(doc[f"obj{key}"]), _cell_of(doc, key, size, grid)
        cells[cell, k, 0] = 1.0
        cells[cell, k, 1] = behaviour.cue(doc, key)
    return cells
