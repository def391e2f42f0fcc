"""Person tags: a number at the centre of each person's box, so an utterance can address
"person2" (the paper's §3; the authors' benchmark/image-processing/4_draw_number.py): white digits
on a black rectangle. The authors used PIL's default font at size 40 on VCR frames (about 1,000 px
wide); here the size follows the image (``tag_size``) so tags stay legible on any frame."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

PAD = 2  # pixels of black around the digits


@dataclass(frozen=True)
class Tag:
    number: int
    centre: tuple[float, float]
    rectangle: tuple[int, int, int, int]  # x0, y0, x1, y1 of the black box (inclusive)


MIN_TAG_SIZE = 4  # px: a smaller digit is unreadable


def tag_size(image: Image.Image) -> int:
    """Font size in pixels: 40 on a 1,000 px frame, scaled with the longer side, at least 10."""
    return max(10, round(40 * max(image.size) / 1000))


def check_boxes(boxes: Sequence[Sequence[float]], size: tuple[int, int]) -> list[tuple[float, float, float, float]]:
    """Boxes as [x1, y1, x2, y2] floats inside the image; ValueError naming the box otherwise."""
    out = []
    for k, box in enumerate(boxes):
        try:
            x1, y1, x2, y2 = (float(v) for v in box)
        except (TypeError, ValueError):
            raise ValueError(f"box {k + 1}: {box!r} is not four numbers x1, y1, x2, y2") from None
        if not (0 <= x1 <= x2 <= size[0] and 0 <= y1 <= y2 <= size[1]):
            raise ValueError(f"box {k + 1}: {[x1, y1, x2, y2]} is not inside the {size[0]:g} x {size[1]:g} image "
                             "with x1 <= x2 and y1 <= y2")
        out.append((x1, y1, x2, y2))
    return out


def draw_person_tags(image: Image.Image, boxes: Sequence[Sequence[float]],
                     size: int | None = None) -> tuple[Image.Image, list[Tag]]:
    """A copy of ``image`` with tag k+1 centred on box k, and where each tag went."""
    checked = check_boxes(boxes, image.size)
    out = image.convert("RGB")
    draw = ImageDraw.Draw(out)
    font = ImageFont.load_default(size=size or tag_size(image))
    tags = []
    for k, (x1, y1, x2, y2) in enumerate(checked):
        text = str(k + 1)
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        w, h = right - left, bottom - top
        x0, y0 = round(cx - w / 2) - PAD, round(cy - h / 2) - PAD
        rectangle = (x0, y0, x0 + w + 2 * PAD - 1, y0 + h + 2 * PAD - 1)
        draw.rectangle(rectangle, fill=(0, 0, 0))
        draw.text((x0 + PAD - left, y0 + PAD - top), text, fill=(255, 255, 255), font=font)
        tags.append(Tag(k + 1, (cx, cy), rectangle))
    return out, tags


def _item_image(item: dict) -> str | None:
    name = item.get("image_name") or (item.get("meta") or {}).get("image_name") or item.get("image")
    return Path(name).name if isinstance(name, str) else None


def read_boxes(boxes: str, image_name: str | None = None) -> list:
    """Person boxes from ``--boxes``: JSON ``[[x1, y1, x2, y2], ...]``, or a JSON file holding such
    a list, a VAGUE item (its ``meta.person_bbox``), or a list of items (the one whose image_name is
    ``image_name``)."""
    text = Path(boxes).read_text(encoding="utf-8") if Path(boxes).is_file() else boxes
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"--boxes: neither JSON nor a JSON file: {boxes[:80]!r}") from None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):  # VAGUE items
        mine = [v for v in value if image_name is not None and _item_image(v) == image_name]
        if len(mine) != 1:
            raise ValueError(f"--boxes: {boxes[:80]} holds a list of {len(value)} VAGUE items, "
                             f"{'none' if not mine else len(mine)} of them for image {image_name!r}; pass the item "
                             "of this image (its meta.person_bbox) or a box list [[x1, y1, x2, y2], ...]")
        value = mine[0]
    if isinstance(value, dict):
        value = (value.get("meta") or {}).get("person_bbox", value.get("person_bbox"))
    if not isinstance(value, list):
        raise ValueError("--boxes: expected a list [[x1, y1, x2, y2], ...] or an item with meta.person_bbox")
    return value


def tag_image_file(image: Path, boxes: str, out: Path, size: int | None = None) -> int:
    """``spatial-tasks vague tag-persons``: ``image`` with the tags of ``boxes`` (``read_boxes``)
    drawn, written to ``out``; returns the number of tags."""
    from spatial_tasks.common.images import open_image
    from spatial_tasks.common.owned import Ledger

    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {out}: a folder; give the image file to write (e.g. {out / 'NAME_annot.jpg'})")
    if out.suffix.lower() not in Image.registered_extensions():
        raise ValueError(f"--out {out}: {out.suffix or 'no suffix'} is not an image format (use .jpg or .png)")
    if out.exists() and out.resolve() == Path(image).resolve():
        raise ValueError(f"--out {out}: that is the image to tag; write the tagged copy to another file")
    if size is not None and size < MIN_TAG_SIZE:
        raise ValueError(f"--size {size}: a tag's font is at least {MIN_TAG_SIZE} px")
    picture = open_image(Path(image).read_bytes(), str(image))
    if size is not None and size > max(picture.size):
        raise ValueError(f"--size {size}: larger than the {picture.size[0]} x {picture.size[1]} image; "
                         f"at most {max(picture.size)} (default here: {tag_size(picture)})")
    tagged, tags = draw_person_tags(picture, read_boxes(boxes, Path(image).name), size)
    out.parent.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out.parent, "spatial-tasks vague tag-persons")  # an image of yours there is never replaced
    ledger.check([out], what_to_do="Choose another --out, or move it away.")
    partial = out.with_name(f".{out.name}.partial{out.suffix}")  # never half an image under the final name
    tagged.save(partial)
    partial.replace(out)
    ledger.record(out)
    return len(tags)
