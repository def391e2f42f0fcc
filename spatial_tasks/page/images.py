"""The images of logged questions as the model saw them, for the report page's sample browser.

lmms-eval logs no image. Each task's docs are loaded again the way the run loaded them -- the
task's own YAML (its ``process_docs`` and ``doc_to_visual``: SpatialTunnel's render, O3-D's markers
drawn from their masks, every image of an in-context prompt), from the data the run's results file
says it read -- and a logged doc id indexes them. Each image becomes a JPEG thumbnail of at most
``THUMB_PX`` pixels a side, named by its content (an image shown by four runs is stored once).

Nothing here stops the page: data that cannot be loaded, a doc that is no longer the question the
run logged, an image that does not decode (checked strictly: lmms-eval lets PIL decode truncated
files as grey) -- each becomes that sample's ``problem``, shown as "image could not be read".
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

THUMB_PX = 160
THUMBS = "thumbs"  # the folder beside index.html
JPEG_QUALITY = 80
# Fields that name a question in both a doc and its logged record: where both have one, they must agree.
IDENTITY_FIELDS = ("question_id", "item_id", "image_id")


@dataclass(frozen=True)
class Shown:
    """A sample's image cell: thumbnail file names (empty: the model was shown no image), or the
    reason none can be shown."""

    names: tuple[str, ...] = ()
    problem: str | None = None


def thumbnail_bytes(image: Image.Image) -> bytes:
    """A JPEG of ``image`` at most THUMB_PX a side (transparency laid on white)."""
    image = image.copy()
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = Image.new("RGB", rgba.size, "white")
        image.paste(rgba, mask=rgba.getchannel("A"))
    image = image.convert("RGB")
    image.thumbnail((THUMB_PX, THUMB_PX), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue()


class _TaskDocs:
    """One task's docs and its doc_to_visual, as one run read them (or why they cannot be had)."""

    def __init__(self, task: str, config: Mapping[str, Any]) -> None:
        self.docs: Any = None
        self.visual: Any = None
        self.problem: str | None = None
        try:
            self.docs, self.visual, self.where = _load(task, config)
        except Exception as err:  # noqa: BLE001 - any reason the data is gone: named on each of its samples
            self.problem = " ".join(str(err).split())[:300] or type(err).__name__
            self.where = task


def _load(task: str, config: Mapping[str, Any]):
    from spatial_tasks.catalog import task_config
    from spatial_tasks.harness.data import TaskData, load_docs
    from spatial_tasks.harness.failures import check_hub_reachable

    try:
        path, full = task_config(task)
    except KeyError:
        raise LookupError(f"no task YAML named {task!r} is installed here, so its docs cannot be loaded") from None
    yaml_data, hook = TaskData.from_config(path, full)
    data = hook.as_run_read_it(yaml_data, config)
    if data is None:
        raise LookupError(f"the run's results file does not say which data {task} read")
    check_hub_reachable(data)
    return load_docs(data, hook), full.get("doc_to_visual"), data.label


class ImageShelf:
    """Thumbnails of every sample's images, written into ``folder / THUMBS``; each task's docs are
    loaded once per distinct source, each thumbnail written once."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder) / THUMBS
        self._tasks: dict[str, _TaskDocs] = {}
        self._shown: dict[tuple[str, int], Shown] = {}
        self.written: set[str] = set()
        self.problems: dict[str, str] = {}  # task -> why its images could not be had (one line each)

    def shown(self, task: str, config: Mapping[str, Any], doc_id: object, record: Mapping[str, Any]) -> Shown:
        from spatial_tasks.common.environment import ENVIRONMENT_KEY, SCORING_KEY

        metadata = config.get("metadata") if isinstance(config.get("metadata"), Mapping) else {}
        source = json.dumps({"task": task, "path": config.get("dataset_path"), "kwargs": config.get("dataset_kwargs"),
                             "metadata": {k: v for k, v in metadata.items() if k not in (ENVIRONMENT_KEY, SCORING_KEY)}},
                            sort_keys=True, default=str)  # runs by other software read the same docs
        docs = self._tasks.get(source)
        if docs is None:
            docs = self._tasks[source] = _TaskDocs(task, config)
            if docs.problem:
                self.problems[task] = docs.problem
        if docs.problem:
            return Shown(problem=docs.problem)
        if not isinstance(doc_id, int) or isinstance(doc_id, bool) or not 0 <= doc_id < len(docs.docs):
            return Shown(problem=f"doc id {doc_id!r} is not a doc of {docs.where} ({len(docs.docs)} docs)")
        key = (source, doc_id)
        if key not in self._shown:
            self._shown[key] = self._thumbnails(docs, doc_id, record)
        return self._shown[key]

    def _thumbnails(self, docs: _TaskDocs, doc_id: int, record: Mapping[str, Any]) -> Shown:
        from spatial_tasks.common.images import strict_decoding

        doc = docs.docs[doc_id]
        for name in IDENTITY_FIELDS:
            if isinstance(doc, Mapping) and name in doc and name in record and str(doc[name]) != str(record[name]):
                return Shown(problem=f"{docs.where} changed since the run: doc {doc_id} is {name} {doc[name]!r}, "
                                     f"the run logged {record[name]!r}")
        if docs.visual is None:
            return Shown()
        try:
            with strict_decoding():
                images = list(docs.visual(doc) or [])
                names = tuple(self._write(thumbnail_bytes(self._image(image))) for image in images)
        except Exception as err:  # noqa: BLE001 - a damaged or missing image: that sample says so
            return Shown(problem=" ".join(str(err).split())[:300] or type(err).__name__)
        return Shown(names=names)

    @staticmethod
    def _image(image: Any) -> Image.Image:
        if isinstance(image, Image.Image):
            image.load()  # strict: a truncated file raises here
            return image
        if isinstance(image, (str, Path)):
            with Image.open(image) as opened:
                opened.load()
                return opened.copy()
        raise TypeError(f"doc_to_visual gave a {type(image).__name__}, not an image")

    def _write(self, data: bytes) -> str:
        name = hashlib.sha256(data).hexdigest()[:24] + ".jpg"
        if name not in self.written:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_bytes(data)
            self.written.add(name)
        return name
