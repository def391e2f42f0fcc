"""What each SpatialTunnel known-behaviour model is taught: its answer to a doc and the cue it reads.

* ``shortcut`` answers as the photo shortcut does: the object higher in the image is farther
  (the ``vertical`` rule of ``spatial_baseline``, the pixel rule of the consistent/counter
  split), so its cue is each object's height in the image;
* ``depth`` answers with the scene's true depths, read from the tunnel's own cue: in a
  one-point perspective the farther object lies nearer the vanishing point (the image centre).

``Behaviour.asked`` reads a doc (the task's own loader made it) as the shared training reads any
benchmark's question (``spatial_tasks.known_models.examples.Asked``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.known_models.examples import Asked, Seen
from spatial_tasks.spatialtunnel import baselines

COLOURS = ("red", "green", "blue", "yellow", "cyan", "magenta", "black")
SHAPES = ("sphere", "cube")
CLASSES = len(COLOURS) * len(SHAPES)  # the vision stage learns where each colour x shape is


def object_class(name: str) -> int:
    colour, shape = name.split(" ")
    return COLOURS.index(colour) * len(SHAPES) + SHAPES.index(shape)


@dataclass(frozen=True)
class Behaviour:
    name: str
    summary: str  # one line: what the model answers

    def answer(self, doc: dict) -> str:
        if self.name == "shortcut":
            return decode_payload(baselines.vertical(doc)).text
        return doc["answer"]

    def cue(self, doc: dict, key: str) -> float:
        """The cue of object ``key`` ("1" or "2") in [-1, 1]-ish units of half the image (smaller: farther)."""
        half_w, half_h = doc["width"] / 2, doc["height"] / 2
        if self.name == "shortcut":
            return doc[f"y{key}"] / half_h - 1.0
        return math.hypot(doc[f"x{key}"] / half_w - 1.0, doc[f"y{key}"] / half_h - 1.0)

    def asked(self, doc: dict) -> Asked:
        """The doc as the training reads it: the image and prompt the task sends, the two named objects."""
        from spatial_tasks.spatialtunnel.tasks import doc_to_text, doc_to_visual

        prompt = doc_to_text(doc)
        seen = {key: Seen(object_class(doc[f"obj{key}"]), doc[f"x{key}"] / doc["width"],
                          doc[f"y{key}"] / doc["height"], self.cue(doc, key)) for key in ("1", "2")}

        def named(key: str) -> tuple[int, Seen]:
            reference = f"the {doc[f'obj{key}']}"
            return prompt.rindex(reference) + len(reference), seen[key]

        subject, other = ("1", "2") if doc["subject"] == "obj1" else ("2", "1")
        word = f" {doc['comparison']}"
        return Asked(image_id=doc["image_id"], image=doc_to_visual(doc)[0], prompt=prompt,
                     objects=tuple(seen.values()), subject=named(subject), other=named(other),
                     word=prompt.rindex(word) + len(word), turned=doc["comparison"] == "farther",
                     answer=self.answer(doc), first="Yes", truth_first=doc["answer"] == "Yes",
                     split={"consistent": 1, "counter": 0}.get(doc["relation_two_way"], -1))


BEHAVIOURS = {
    "shortcut": Behaviour("shortcut", "the object higher in the image is farther (the photo shortcut)"),
    "depth": Behaviour("depth", "the scene's true depths, from the distance to the vanishing point"),
}


def read_docs(parquets) -> list[dict]:
    """The phase docs of generator parquets, through the task's loader (checked once, there)."""
    import datasets

    from spatial_tasks.spatialtunnel import load

    table = datasets.Dataset.from_parquet([str(p) for p in parquets])
    return list(load.to_docs(table, variant="phase", label=str(parquets[0].parent)))
