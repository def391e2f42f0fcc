"""Training examples for a known-behaviour model, built exactly as lmms-eval feeds a model.

A benchmark says what its planted behaviour sees in one doc as an ``Asked``: the image and prompt
the task sends (its own ``doc_to_visual`` / ``doc_to_text``), the objects in the image with the
planted cue of each, where in the prompt the question names the two things it compares and the
word its answer turns on, and the answer the behaviour gives. This module turns those into
tensors: the image through the path lmms-eval's ``qwen2_5_vl`` takes (JPEG data URL at quality 85,
``qwen_vl_utils`` resizing within the pixel bounds, the processor's patches), the prompt in the
chat template with the system turn, the answer and ``<|im_end|>`` after it, and the token positions
and targets the auxiliary heads of ``train`` read. Nothing here knows a benchmark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from PIL import Image

# The pixel bounds every tiny-model run passes (tests/lmms.py, demo.py): a 128 px render becomes
# 140 x 140, 10 x 10 patches, 5 x 5 merged image tokens.
MIN_PIXELS, MAX_PIXELS = 3136, 50176
SYSTEM_PROMPT = "You are a helpful assistant."  # lmms-eval's qwen2_5_vl default


@dataclass(frozen=True)
class Seen:
    """One object in the image as the planted behaviour sees it."""

    kind: int  # which of the behaviour's object classes (the vision stage learns where each is)
    x: float  # centre, as a fraction of the image's width
    y: float  # and of its height
    cue: float  # the planted cue (for every behaviour: a smaller cue is farther)


@dataclass(frozen=True)
class Asked:
    """One question as the planted behaviour reads and answers it."""

    image_id: str  # questions about one image share its encoding
    image: Image.Image  # as the task's doc_to_visual gives it
    prompt: str  # as the task's doc_to_text gives it
    objects: tuple[Seen, ...]  # what the vision stage learns about the image
    subject: tuple[int, Seen]  # where the prompt's reference to the thing asked about ends, and that thing
    other: tuple[int, Seen]  # and the thing it is compared with
    word: int  # where the word the answer turns on ends ("closer", the first option, ...)
    turned: bool  # the first answer means "the subject is farther" (else "... closer")
    answer: str  # the planted behaviour's answer: one token
    first: str  # the first of the two answers ("Yes", "A"): p(first) is what the figures read
    truth_first: bool  # the true answer is the first
    split: int = -1  # the benchmark's cue split where it has one: 1 consistent, 0 counter, -1 none


@dataclass
class Images:
    """Every image once: the processor's patches and, per merged token, the cue targets."""

    pixel_values: torch.Tensor  # (n_images, patches, patch_dim)
    grid_thw: torch.Tensor  # (1, 3): every image has the same grid
    cells: torch.Tensor  # (n_images, tokens, classes, 2): presence, cue value (standardised)


@dataclass
class Questions:
    image: torch.Tensor  # (n,) index into Images
    input_ids: torch.Tensor  # (n, length) right padded: prompt, answer token, <|im_end|>
    attention_mask: torch.Tensor
    answer_at: torch.Tensor  # (n,) position whose logits predict the answer token
    names_at: torch.Tensor  # (n, 2) positions of the last token of the subject's and the other's reference
    name_cues: torch.Tensor  # (n, 2) the cue of each (standardised)
    name_tokens: torch.Tensor  # (n, 2) position of the image token whose cell holds each
    relation_at: torch.Tensor  # (n,) position of the word the answer turns on
    farther: torch.Tensor  # (n,) 1 where the first answer means "the subject is farther"
    label_yes: torch.Tensor  # (n,) 1 where the planted behaviour gives the first answer
    truth_yes: torch.Tensor  # (n,) 1 where the true answer is the first
    consistent: torch.Tensor  # (n,) 1 consistent, 0 counter, -1 no split


def chat_text(processor, prompt: str) -> str:
    """The prompt as lmms-eval's qwen2_5_vl renders it: the system turn, the image before the text, the
    generation prompt (the chat template reads only the image part's type)."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    return processor.apply_chat_template([messages], tokenize=False, add_generation_prompt=True)[0]


def build_examples(asked: Iterable[Asked], processor, classes: int) -> tuple[Images, Questions]:
    """Tensors for every question: each image processed once, each question tokenised once."""
    from spatial_tasks.models.lmms_requests import lmms_eval_image

    tokenizer = processor.tokenizer
    by_image: dict[str, int] = {}
    pixel_rows, cell_rows, grid = [], [], None
    rows: dict[str, list] = {k: [] for k in ("image", "ids", "answer_at", "names_at", "name_cues", "name_tokens",
                                             "relation_at", "farther", "label_yes", "truth_yes", "consistent")}
    for a in asked:
        if a.image_id not in by_image:
            out = processor.image_processor(images=[lmms_eval_image(a.image, MIN_PIXELS, MAX_PIXELS)],
                                            return_tensors="pt")
            if grid is None:
                grid = out["image_grid_thw"]
            elif not torch.equal(grid, out["image_grid_thw"]):
                raise ValueError(f"{a.image_id}: image grid {out['image_grid_thw'].tolist()} differs from "
                                 f"{grid.tolist()}; train on images of one size")
            by_image[a.image_id] = len(pixel_rows)
            pixel_rows.append(out["pixel_values"])
            cell_rows.append(_cells(a.objects, grid, classes))
        row = _question_row(a, tokenizer, chat_text(processor, a.prompt), grid)
        row["image"] = by_image[a.image_id]
        for key, value in row.items():
            rows[key].append(value)
    if grid is None:
        raise ValueError("no questions to train on")
    length = max(len(r) for r in rows["ids"])
    ids = torch.full((len(rows["ids"]), length), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows["ids"]):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    # cues standardised over the compared things, so that the heads' losses weigh alike for any cue
    cells = torch.stack(cell_rows)
    cues = torch.tensor(rows["name_cues"], dtype=torch.float32)
    mean, std = cues.mean(), cues.std()
    cells[..., 1] = (cells[..., 1] - mean) / std * cells[..., 0]
    def flag(key: str) -> torch.Tensor:
        return torch.tensor(rows[key], dtype=torch.float32)

    questions = Questions(
        image=torch.tensor(rows["image"]), input_ids=ids, attention_mask=mask,
        answer_at=torch.tensor(rows["answer_at"]), names_at=torch.tensor(rows["names_at"]),
        name_cues=(cues - mean) / std, name_tokens=torch.tensor(rows["name_tokens"]),
        relation_at=torch.tensor(rows["relation_at"]), farther=flag("farther"), label_yes=flag("label_yes"),
        truth_yes=flag("truth_yes"), consistent=torch.tensor(rows["consistent"]))
    return Images(torch.stack(pixel_rows), grid, cells), questions


def _last_token_at(tokenizer, text: str, end: int, ids: list[int], what: str) -> int:
    """The position of the token that ends at character ``end`` of ``text`` (tokenised as ``ids``)."""
    head = tokenizer.encode(text[:end], add_special_tokens=False)
    if head + tokenizer.encode(text[end:], add_special_tokens=False) != ids:
        raise ValueError(f"{what} does not end on a token boundary")
    return len(head) - 1


def _question_row(a: Asked, tokenizer, text: str, grid: torch.Tensor) -> dict:
    """One question's token ids (prompt, answer, <|im_end|>) and the positions and targets the heads read."""
    expanded = text.replace("<|image_pad|>", "<|image_pad|>" * int(grid.prod() // 4))
    ids = tokenizer.encode(expanded, add_special_tokens=False)
    answer_ids = tokenizer.encode(a.answer, add_special_tokens=False)
    if len(answer_ids) != 1:
        raise ValueError(f"{a.image_id}: answer {a.answer!r} is not one token")
    start = expanded.rindex(a.prompt)  # the offsets are the prompt's own
    first_image_token = ids.index(tokenizer.convert_tokens_to_ids("<|image_pad|>"))
    names, cues, cells = [], [], []
    for role, (end, thing) in (("subject", a.subject), ("other", a.other)):
        names.append(_last_token_at(tokenizer, expanded, start + end, ids,
                                    f"{a.image_id}: the {role}'s reference {a.prompt[:end][-30:]!r}"))
        cues.append(thing.cue)
        cells.append(first_image_token + _cell_of(thing, grid))
    word_at = _last_token_at(tokenizer, expanded, start + a.word, ids, f"{a.image_id}: {a.prompt[:a.word][-20:]!r}")
    return {"ids": ids + answer_ids + tokenizer.encode("<|im_end|>", add_special_tokens=False),
            "answer_at": len(ids) - 1, "names_at": names, "name_cues": cues, "name_tokens": cells,
            "relation_at": word_at, "farther": a.turned, "label_yes": a.answer == a.first,
            "truth_yes": a.truth_first, "consistent": a.split}


def _cell_of(thing: Seen, grid: torch.Tensor) -> int:
    """The merged image token (row-major, 2 x 2 patches each) whose cell holds the thing's centre."""
    _, rows, cols = (int(v) // (2 if i else 1) for i, v in enumerate(grid[0]))
    return min(int(thing.y * rows), rows - 1) * cols + min(int(thing.x * cols), cols - 1)


def _cells(objects: Iterable[Seen], grid: torch.Tensor, classes: int) -> torch.Tensor:
    """Per merged image token: which object classes have their centre there (presence) and the cue."""
    cells = torch.zeros(int(grid[0].prod()) // 4, classes, 2)
    for thing in objects:
        cell = _cell_of(thing, grid)
        cells[cell, thing.kind, 0] = 1.0
        cells[cell, thing.kind, 1] = thing.cue
    return cells
