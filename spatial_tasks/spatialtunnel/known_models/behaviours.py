"""What each known-behaviour model is taught: its answer to a doc and the cue it reads.

* ``shortcut`` answers as the photo shortcut does: the object higher in the image is farther
  (the ``vertical`` rule of ``spatial_baseline``, the pixel rule of the consistent/counter
  split), so its cue is each object's height in the image;
* ``depth`` answers with the scene's true depths, read from the tunnel's own cue: in a
  one-point perspective the farther object lies nearer the vanishing point (the image centre).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spatial_tasks.common.yesno import decode_payload
from spatial_tasks.spatialtunnel import baselines


@dataclass(frozen=True)
class Behaviour:
    name: str
    summary: str  # one line: what the model answers

    def answer(self, doc: dict) -> str:
        if self.name == "shortcut":
            return decode_payload(baselines.vertical(doc)).text
        return doc["answer"]

    def cue(self, doc: dict, key: str) -> float:
        """The cue of object ``key`` ("1" or "2") in [-1, 1]-ish units of half the image."""
        half_w, half_h = doc["width"] / 2, doc["height"] / 2
        if self.name == "shortcut":
            return doc[f"y{key}"] / half_h - 1.0
        return math.hypot(doc[f"x{key}"] / half_w - 1.0, doc[f"y{key}"] / half_h - 1.0)


BEHAVIOURS = {
    "shortcut": Behaviour("shortcut", "the object higher in the image is farther (the photo shortcut)"),
    "depth": Behaviour("depth", "the scene's true depths, from the distance to the vanishing point"),
}
