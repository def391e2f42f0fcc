"""The VAGUE dataset-construction pipeline (paper §3, Appendix A), against any OpenAI-compatible
chat endpoint, in two passes around a human step:

    spatial-tasks generate vague --scenes scenes.json --images frames/ --subset vcr --out OUT \\
        --model gpt-4o --base-url https://api.openai.com/v1 [--api-key-env OPENAI_API_KEY] [--rpm 60]
    # label OUT/labelstudio/tasks.json in Label Studio (OUT/labelstudio/config.xml), export JSON, then
    spatial-tasks generate vague --out OUT --labels export.json

Pass 1, per scene (object tags and person boxes in; ``SCENE`` below), five prompts
(``generators/vague/prompts/``): (1) a direct request, its (person, action, object) triplet and a
caption, with the image; (2) the correct intention; (3) three indirect candidates (sarcasm, humour,
meme/idiom), each with its superficial reading (SU); (4) a fake scene and the intention it implies
(FS) for each candidate; (5) an object absent from the image but expected there, and the intention
that uses it (NE), with the image. Every call's raw response is stored in
``OUT/_work/responses/<image_name>/<stage>.json`` (atomically) before it is used; a rerun reuses
stored responses, so an interrupted run resumes without paying for any call twice. Answers are
validated (pydantic); the triplet's person must be tagged and its object among the tags. Calls
are retried with back-off by the OpenAI client (``--max-retries``) and paced to ``--rpm``.
Pass 1 ends with the Label Studio tasks.

Pass 2 reads the Label Studio export: per scene a rating of the direct request (1-5), the chosen
indirect candidate (1-3) and its rating (1-5); it keeps the paper's thresholds (direct 4-5,
indirect >= 3) and writes the dataset in the official item format: ``OUT/<subset>_<n>_generated.json``,
person-tagged images ``OUT/images/<image_name>_annot.jpg`` and a card ``OUT/README.md`` whose configs
declare both (so ``spatial-tasks publish`` uploads them). Every item is checked with the benchmark's
own loader before anything is written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.folder import OutputFolder
from spatial_tasks.generators.common.jobs import atomic_write_json, atomic_write_text

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.images import open_image
from spatial_tasks.common.validate import http_url, safe_name, safe_relative_path
from spatial_tasks.vague.load import item_to_doc, listener_of
from spatial_tasks.vague.person_tags import draw_person_tags
from spatial_tasks.vague.schema import IMAGE_SUFFIX, LETTERS, SUBSETS

log = logging.getLogger(__name__)

WORK_DIR = "_work"
PROMPTS = Path(__file__).with_name("prompts")
CARD_TEMPLATE = Path(__file__).with_name("card.md.jinja")
STAGES = ("direct", "correct", "indirect", "fake_scene", "wrong_entity")
KEEP_DIRECT = (4, 5)  # the paper's keep thresholds for the human ratings (1-5)
KEEP_INDIRECT_MIN = 3
LABEL_CONFIG = """<View>
  <Image name="image" value="$image"/>
  <Header value="Direct request: $direct   (triplet $solution)"/>
  <Rating name="direct_rating" toName="image" maxRating="5"/>
  <Header value="1. $indirect_1"/>
  <Header value="2. $indirect_2"/>
  <Header value="3. $indirect_3"/>
  <Choices name="indirect_choice" toName="image" choice="single" required="true">
    <Choice value="1"/><Choice value="2"/><Choice value="3"/>
  </Choices>
  <Rating name="indirect_rating" toName="image" maxRating="5"/>
</View>
"""


class PipelineError(UserError, ValueError):
    """Bad input, a bad answer or a failed call; the message names the scene and the stage."""


# ----------------------------------------------------------------------------------- schemas


class Scene(BaseModel):
    """One input scene: the frame, its object tags (RAM) and person boxes."""

    image_name: str = Field(min_length=1)
    image: str | None = None  # the frame's file under --images (default: <image_name>.jpg)
    ram_entity: list[str] = Field(min_length=1)
    person_bbox: list[list[float]] = Field(min_length=1)

    @field_validator("image_name")
    @classmethod
    def _name(cls, value):  # it names files under --out: nothing may leave that folder
        return safe_name(value, "image_name")

    @field_validator("image")
    @classmethod
    def _image(cls, value):
        return value if value is None else safe_relative_path(value, "image")

    @field_validator("person_bbox")
    @classmethod
    def _boxes(cls, boxes):
        for k, box in enumerate(boxes):
            if len(box) != 4 or not (box[0] <= box[2] and box[1] <= box[3]):
                raise ValueError(f"person_bbox[{k}] = {box} is not [x1, y1, x2, y2]")
        return boxes


class Direct(BaseModel):
    direct: str = Field(min_length=3)
    solution: str
    caption: str = Field(min_length=3)

    @field_validator("solution")
    @classmethod
    def _triplet(cls, value):
        if not re.fullmatch(r"\(\s*person\d+\s*,\s*[^,()]+,\s*[^()]+\)", value.strip()):
            raise ValueError(f"{value!r} is not a (personN, action, object) triplet")
        return value.strip()


class Correct(BaseModel):
    correct: str = Field(min_length=3)


class Candidate(BaseModel):
    style: str
    indirect: str = Field(min_length=3)
    superficial: str = Field(min_length=3)


class Indirect(BaseModel):
    candidates: list[Candidate] = Field(min_length=3, max_length=3)


class Fake(BaseModel):
    fake_caption: str = Field(min_length=3)
    fake_scene: str = Field(min_length=3)


class FakeScenes(BaseModel):
    fake: list[Fake] = Field(min_length=3, max_length=3)


class WrongEntity(BaseModel):
    absent_object: str = Field(min_length=1)
    wrong_entity: str = Field(min_length=3)


ANSWERS: dict[str, type[BaseModel]] = {"direct": Direct, "correct": Correct, "indirect": Indirect,
                                       "fake_scene": FakeScenes, "wrong_entity": WrongEntity}
WITH_IMAGE = ("direct", "wrong_entity")


def read_scenes(path: Path) -> list[Scene]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise PipelineError(f"--scenes {path}: not a readable JSON file ({type(err).__name__})") from None
    if not isinstance(raw, list) or not raw:
        raise PipelineError(f"--scenes {path}: expected a non-empty JSON list of scenes")
    scenes, names = [], set()
    for k, entry in enumerate(raw):
        try:
            scene = Scene.model_validate(entry)
        except ValidationError as err:
            first = err.errors()[0]
            raise PipelineError(f"--scenes {path}, entry {k}, field {'.'.join(map(str, first['loc']))}: "
                                f"{first['msg']}") from None
        if scene.image_name in names:
            raise PipelineError(f"--scenes {path}, entry {k}: image_name {scene.image_name!r} appears twice")
        names.add(scene.image_name)
        scenes.append(scene)
    return scenes


# ------------------------------------------------------------------------------------ calls


class Pacer:
    """At most ``rpm`` calls per minute across threads (evenly spaced)."""

    def __init__(self, rpm: float) -> None:
        self.interval = 60.0 / rpm if rpm > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            time.sleep(delay)


class Client:
    """A chat endpoint: the OpenAI client (its own retries with back-off on 429, 5xx and network
    errors) paced to ``rpm``."""

    def __init__(self, model: str, base_url: str, api_key: str, *, rpm: float = 60, max_retries: int = 5,
                 timeout: float = 60.0, temperature: float = 0.0) -> None:
        from openai import OpenAI

        self.model, self.temperature = model, temperature
        self._client = OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout)
        self._pacer = Pacer(rpm)

    def __call__(self, prompt: str, image: bytes | None) -> dict:
        content: list[dict] = [{"type": "text", "text": prompt}]
        if image is not None:
            url = "data:image/jpeg;base64," + base64.b64encode(image).decode("ascii")
            content.insert(0, {"type": "image_url", "image_url": {"url": url}})
        from openai import OpenAIError  # APIError, timeouts and connection errors alike

        self._pacer.wait()
        try:
            response = self._client.chat.completions.create(model=self.model, temperature=self.temperature,
                                                            messages=[{"role": "user", "content": content}])
        except OpenAIError as err:  # after the client's own retries (timeouts included)
            raise PipelineError(f"the API call failed ({type(err).__name__}: {' '.join(str(err).split())[:160]})") from None
        except ValueError as err:  # a body that claims to be JSON and is not (the client parses it itself)
            raise PipelineError(f"the endpoint's reply is not JSON ({' '.join(str(err).split())[:120]}); check "
                                "--base-url") from None
        return reply_of(response)


def reply_of(response: Any) -> dict:
    """{text, model, usage} of a chat completion; an endpoint that answered something else (an
    HTML page, ``{}``, no choices, a non-text message) is a PipelineError saying so."""
    try:
        choices = response.choices
        if not choices:
            raise PipelineError("the endpoint's reply has no choices; check --base-url and --model")
        text = choices[0].message.content
        if text is not None and not isinstance(text, str):
            raise PipelineError(f"the endpoint's reply holds no text message ({type(text).__name__})")
        usage = response.usage.model_dump() if getattr(response, "usage", None) else None
        return {"text": text or "", "model": str(getattr(response, "model", "") or ""), "usage": usage}
    except (AttributeError, TypeError, IndexError, KeyError):
        raise PipelineError(f"the endpoint did not answer with a chat completion (got {str(response)[:120]!r}); "
                            "check --base-url") from None


MAX_OBJECT_STARTS = 64


def first_json_object(text: str) -> Any:
    """The first JSON object in a reply (models wrap JSON in prose or code fences)."""
    decoder = json.JSONDecoder()
    for attempt, match in enumerate(re.finditer(r"\{", text)):
        if attempt == MAX_OBJECT_STARTS:  # a real reply holds its object near the start; this bounds the work
            break
        try:
            value, _ = decoder.raw_decode(text[match.start():])
        except (ValueError, RecursionError):  # not JSON from here, or nested beyond any real answer
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("no JSON object in the reply")


def _first_problem(err: Exception) -> str:
    """One line of a validation error: pydantic's first error as "field: message"."""
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'answer'}: {first['msg']}"
    return str(err).splitlines()[0]


def _render(stage: str, **fields: Any) -> str:
    return ds.render_template(PROMPTS / f"{stage}.jinja", **fields).strip()


def _read_json(path: Path, what: str) -> dict:
    """A JSON object this pipeline wrote; anything else is a PipelineError naming the file."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise PipelineError(f"{path}: {what} cannot be read ({type(err).__name__}); rerun pass 1 with the same "
                            "command to rebuild it") from None
    if not isinstance(value, dict):
        raise PipelineError(f"{path}: {what} is not a JSON object; rerun pass 1 with the same command")
    return value


def _stored(path: Path) -> dict | None:
    """A stored stage record, or None when there is none. One that cannot be read (it was
    written atomically, so something else damaged it) is named in a warning and asked again."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        log.warning("%s: a damaged stored reply (%s); asking again", path, type(err).__name__)
        return None
    return record if isinstance(record, dict) else None


class Stages:
    """Runs the five stages of one scene; every raw response is stored before it is used."""

    def __init__(self, out: Path, call: Callable[[str, bytes | None], dict], images: Path, attempts: int = 2) -> None:
        self.work = Path(out) / WORK_DIR / "responses"
        self.call, self.images, self.attempts = call, Path(images), attempts
        self.calls_made = 0

    def _image(self, scene: Scene) -> bytes:
        path = self.images / (scene.image or f"{scene.image_name}.jpg")
        if not path.is_file():
            raise PipelineError(f"scene {scene.image_name!r}: frame {path} not found under --images")
        open_image(path.read_bytes(), str(path))  # a damaged frame stops here, not at the API
        return path.read_bytes()

    def ask(self, scene: Scene, stage: str, prompt: str) -> BaseModel:
        record_path = self.work / scene.image_name / f"{stage}.json"
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        record = _stored(record_path)
        if record is not None and record.get("prompt_sha256") == digest and record.get("parsed") is not None:
            try:  # resume: a stored answer to this very prompt, held to the checks a new one meets
                stored = ANSWERS[stage].model_validate(record["parsed"])
                self._check(scene, stage, stored)
            except (ValueError, ValidationError) as err:
                raise PipelineError(f"{record_path}: the stored {stage} answer no longer fits ({_first_problem(err)}); "
                                    "it was edited or damaged: repair its 'parsed' field, or delete the file to ask "
                                    "the model again") from None
            return stored
        image = self._image(scene) if stage in WITH_IMAGE else None
        problem = None
        for attempt in range(1, self.attempts + 1):
            try:
                reply = self.call(prompt, image)
            except PipelineError as err:
                raise PipelineError(f"scene {scene.image_name!r}, stage {stage}: {err}; rerun the same command "
                                    "to resume (answers so far are kept)") from None
            self.calls_made += 1
            record = {"stage": stage, "image_name": scene.image_name, "prompt": prompt, "prompt_sha256": digest,
                      "with_image": image is not None, "attempt": attempt, "reply": reply, "parsed": None}
            try:
                parsed = ANSWERS[stage].model_validate(first_json_object(reply["text"]))
                self._check(scene, stage, parsed)
            except (ValueError, ValidationError) as err:
                problem = _first_problem(err)
                record["problem"] = problem
                atomic_write_json(record_path.with_name(f"{stage}.rejected{attempt}.json"), record)
                continue
            record["parsed"] = parsed.model_dump()
            atomic_write_json(record_path, record)
            return parsed
        raise PipelineError(f"scene {scene.image_name!r}, stage {stage}: no valid answer in {self.attempts} "
                            f"attempt(s) ({problem}); the replies are in {record_path.parent}")

    @staticmethod
    def _check(scene: Scene, stage: str, answer: BaseModel) -> None:
        if isinstance(answer, Direct):
            person, _, obj = (p.strip() for p in answer.solution.strip("() ").split(",", 2))
            number = int(person.removeprefix("person"))
            if not 1 <= number <= len(scene.person_bbox):
                raise ValueError(f"{person} is not one of the {len(scene.person_bbox)} tagged people")
            if obj.lower() not in {e.lower() for e in scene.ram_entity}:
                raise ValueError(f"the triplet's object {obj!r} is not among the scene's objects {scene.ram_entity}")

    def run(self, scene: Scene) -> dict:
        objects = ", ".join(scene.ram_entity)
        people = ", ".join(f"person{k}" for k in range(1, len(scene.person_bbox) + 1))
        direct = self.ask(scene, "direct", _render("direct", objects=objects, people=people))
        listener = listener_of(direct.solution)
        correct = self.ask(scene, "correct", _render("correct", listener=listener, direct=direct.direct,
                                                     solution=direct.solution))
        indirect = self.ask(scene, "indirect", _render("indirect", correct=correct.correct, direct=direct.direct,
                                                       caption=direct.caption, listener=listener))
        fake = self.ask(scene, "fake_scene", _render("fake_scene", caption=direct.caption, correct=correct.correct,
                                                     candidates=indirect.candidates))
        wrong = self.ask(scene, "wrong_entity", _render("wrong_entity", correct=correct.correct, objects=objects))
        return {"scene": scene.model_dump(), "direct": direct.model_dump(), "correct": correct.correct,
                "candidates": [c.model_dump() for c in indirect.candidates], "fake": [f.model_dump() for f in fake.fake],
                "wrong_entity": wrong.model_dump()}


# ------------------------------------------------------------------------------- pass 1


def generate_candidates(scenes_path: Path, images: Path, out: Path, subset: str,
                        call: Callable[[str, bytes | None], dict], *, overwrite: bool = False) -> Path:
    """Pass 1 (see the module docstring); returns the Label Studio tasks file."""
    if subset not in SUBSETS:
        raise PipelineError(f"--subset {subset!r}: choose one of {list(SUBSETS)}")
    scenes = read_scenes(scenes_path)
    with OutputFolder(Path(out), WORK_DIR) as folder:
        folder.claim("vague", {"generator": "spatial_tasks.generators.vague", "subset": subset,
                               "scenes": str(Path(scenes_path).resolve())}, [], overwrite)
        stages = Stages(folder.root, call, images)
        results = []
        from tqdm import tqdm

        for scene in tqdm(scenes, desc="VAGUE stages", unit="scene", disable=len(scenes) < 5):
            result = stages.run(scene)
            atomic_write_json(folder.work / "candidates" / f"{scene.image_name}.json", result)
            results.append(result)
        tasks = []
        for k, r in enumerate(results):
            scene = Scene.model_validate(r["scene"])
            tasks.append({"id": k + 1, "data": {
                "image": f"/data/local-files/?d={Path(images).name}/{scene.image or scene.image_name + '.jpg'}",
                "image_name": scene.image_name, "direct": r["direct"]["direct"], "solution": r["direct"]["solution"],
                **{f"indirect_{j + 1}": c["indirect"] for j, c in enumerate(r["candidates"])}}})
        labels = folder.root / "labelstudio"
        folder.ledger.check([labels / "tasks.json", labels / "config.xml"],
                            what_to_do="Move them away, or use another --out.")
        atomic_write_json(labels / "tasks.json", tasks)
        atomic_write_text(labels / "config.xml", LABEL_CONFIG)
        folder.ledger.record(labels / "tasks.json", labels / "config.xml")
        atomic_write_json(folder.work / "pass1.json", {"subset": subset, "scenes": str(Path(scenes_path).resolve()),
                                                       "images": str(Path(images).resolve()),
                                                       "calls_made": stages.calls_made})
        log.info("pass 1: %d scene(s), %d API call(s) made this run", len(results), stages.calls_made)
        return labels / "tasks.json"


# ------------------------------------------------------------------------------- pass 2


def read_labels(path: Path) -> dict[str, dict]:
    """image_name -> {direct_rating, indirect_choice (1-3), indirect_rating} from a Label Studio
    JSON export (the first annotation of each task)."""
    try:
        exported = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise PipelineError(f"--labels {path}: not a readable Label Studio JSON export ({type(err).__name__})") from None
    if not isinstance(exported, list):
        raise PipelineError(f"--labels {path}: expected a JSON list of tasks (Label Studio's JSON export)")
    out = {}
    for k, task in enumerate(exported):
        where = f"--labels {path}, task {k}"
        if not isinstance(task, dict):
            raise PipelineError(f"{where}: a task is a JSON object, got {type(task).__name__}")
        data = task.get("data")
        if not isinstance(data, dict):
            raise PipelineError(f"{where}: 'data' must be the task's object (with its image_name), got "
                                f"{type(data).__name__}")
        name = data.get("image_name")
        annotations = task.get("annotations")
        if not name or not annotations:
            continue  # not annotated: not kept
        if not isinstance(name, str):
            raise PipelineError(f"{where}: data.image_name must be text, got {type(name).__name__}")
        if not isinstance(annotations, list) or not isinstance(annotations[0], dict) \
                or not isinstance(annotations[0].get("result", []), list):
            raise PipelineError(f"{where} ({name!r}): 'annotations' must be a list of objects with a 'result' list")
        values: dict[str, Any] = {}
        for result in annotations[0].get("result", []):
            if not isinstance(result, dict) or not isinstance(result.get("value", {}), dict):
                raise PipelineError(f"{where} ({name!r}): an annotation result is not an object with a 'value' object")
            value = result.get("value", {})
            if result.get("type") == "rating":
                values[result.get("from_name")] = value.get("rating")
            elif result.get("type") == "choices" and isinstance(value.get("choices"), list) and value["choices"]:
                values[result.get("from_name")] = value["choices"][0]
        try:
            label = {"direct_rating": int(values["direct_rating"]), "indirect_choice": int(values["indirect_choice"]),
                     "indirect_rating": int(values["indirect_rating"])}
        except (KeyError, TypeError, ValueError):
            raise PipelineError(f"--labels {path}, task {k} ({name!r}): needs direct_rating, indirect_choice and "
                                f"indirect_rating (found {sorted(map(str, values))})") from None
        if not (1 <= label["direct_rating"] <= 5 and 1 <= label["indirect_rating"] <= 5
                and 1 <= label["indirect_choice"] <= 3):
            raise PipelineError(f"--labels {path}, task {k} ({name!r}): ratings are 1-5 and the choice 1-3, got {label}")
        out[name] = label
    return out


def kept(label: dict) -> bool:
    """The paper's thresholds: direct rated 4-5, the chosen indirect rated 3 or more."""
    return label["direct_rating"] in KEEP_DIRECT and label["indirect_rating"] >= KEEP_INDIRECT_MIN


def build_item(result: dict, label: dict, seed: int) -> dict:
    """One official VAGUE 2.0 item from the stage answers and the human labels."""
    scene = result["scene"]
    chosen = result["candidates"][label["indirect_choice"] - 1]
    fake = result["fake"][label["indirect_choice"] - 1]
    ordering = random.Random(f"{seed}:{scene['image_name']}").sample(list(LETTERS), 4)
    return {
        "image_name": scene["image_name"], "direct": result["direct"]["direct"], "indirect": chosen["indirect"],
        "solution": result["direct"]["solution"],
        "mcq": {"1_correct": result["correct"], "2_fake_scene": fake["fake_scene"],
                "3_surface_understanding": chosen["superficial"], "4_wrong_entity": result["wrong_entity"]["wrong_entity"],
                "ordering": ordering},
        "meta": {"caption": result["direct"]["caption"], "ram_entity": scene["ram_entity"],
                 "person_bbox": scene["person_bbox"], "rating": {"direct": label["direct_rating"],
                                                                 "indirect": label["indirect_rating"]},
                 "fake_caption": fake["fake_caption"], "annot_link": "",
                 "absent_object": result["wrong_entity"]["absent_object"], "indirect_style": chosen["style"]},
    }


def build_dataset(out: Path, labels_path: Path, seed: int = 0) -> Path:
    """Pass 2 (see the module docstring); returns the item file."""
    with OutputFolder(Path(out), WORK_DIR) as folder:
        state_path = folder.work / "pass1.json"
        if not state_path.is_file():
            raise PipelineError(f"{folder.root}: pass 1 has not run here (no {state_path}); run with --scenes first")
        state = _read_json(state_path, "pass 1's record")
        labels = read_labels(labels_path)
        items, below, unlabelled = [], 0, 0
        images = Path(state["images"])
        candidates = {}
        for path in sorted((folder.work / "candidates").glob("*.json")):
            result = _read_json(path, "a pass-1 candidate")
            candidates[result["scene"]["image_name"]] = result
        unknown = sorted(set(labels) - set(candidates))
        if unknown:  # labels of another run (or a typo) would silently label nothing
            raise PipelineError(f"--labels {labels_path}: {len(unknown)} labelled scene(s) that pass 1 did not make "
                                f"here: {unknown[:5]}{' ...' if len(unknown) > 5 else ''} (pass 1 made "
                                f"{len(candidates)}: {sorted(candidates)[:5]}{' ...' if len(candidates) > 5 else ''})")
        (folder.root / "images").mkdir(exist_ok=True)
        for name, result in candidates.items():
            if name not in labels:
                unlabelled += 1
                continue
            if not kept(labels[name]):
                below += 1
                continue
            item = build_item(result, labels[name], seed)
            frame = images / (result["scene"].get("image") or f"{name}.jpg")
            image = open_image(frame.read_bytes(), str(frame)).convert("RGB")
            item["meta"]["img_size"] = {"width": image.width, "height": image.height}
            tagged, _ = draw_person_tags(image, item["meta"]["person_bbox"])
            target = folder.root / "images" / f"{name}{IMAGE_SUFFIX}"
            item_to_doc(item, len(items), target, state["subset"], target)  # the benchmark's own checks
            folder.ledger.check([target], what_to_do="Move it away, or use another --out.")
            tagged.save(target, format="JPEG", quality=95)
            folder.ledger.record(target)
            items.append(item)
        if not items:
            raise PipelineError(f"--labels {labels_path}: no scene kept: {len(candidates)} made by pass 1, "
                                f"{unlabelled} without an annotated label, {below} below the keep thresholds "
                                "(direct 4-5, indirect >= 3)")
        out_file = folder.root / f"{state['subset']}_{len(items)}_generated.json"
        folder.ledger.remove(*(old for old in folder.root.glob(f"{state['subset']}_*_generated.json") if old != out_file),
                             what_to_do="Move them away, or use another --out.")
        folder.ledger.check([out_file], what_to_do="Move it away, or use another --out.")
        atomic_write_text(out_file, json.dumps(items, indent=2) + "\n")
        folder.ledger.record(out_file)
        text = ds.render_template(CARD_TEMPLATE, subset=state["subset"], items=len(items), skipped=below + unlabelled,
                                  item_file=out_file.name)
        ds.write_card(folder.root, text)
        log.info("pass 2: %d item(s) kept, %d not kept -> %s", len(items), below + unlabelled, out_file)
        return out_file


def api_key(env: str) -> str:
    key = os.environ.get(env)
    if not key:
        raise PipelineError(f"--api-key-env {env}: that environment variable is not set")
    return key


def generate(out: Path, *, scenes: Path | None = None, images: Path | None = None, subset: str = "vcr",
             labels: Path | None = None, model: str = "gpt-4o", base_url: str = "https://api.openai.com/v1",
             api_key_env: str = "OPENAI_API_KEY", rpm: float = 60, max_retries: int = 5, timeout: float = 60,
             seed: int = 0, overwrite: bool = False) -> Path:
    """Pass 1 with ``scenes`` + ``images``, pass 2 with ``labels`` (see the module docstring)."""
    if (scenes is None) == (labels is None):
        raise PipelineError("give either --scenes and --images (pass 1: ask the model) or --labels (pass 2: build "
                            "the dataset from the Label Studio export)")
    if labels is not None:
        return build_dataset(out, labels, seed)
    if images is None or not Path(images).is_dir():
        raise PipelineError(f"--images {images}: the folder of frames is needed with --scenes")
    try:
        http_url(base_url, "--base-url")
    except ValueError as err:
        raise PipelineError(str(err)) from None
    for flag, value, low, high in (("--rpm", rpm, 1e-6, 1e6), ("--timeout", timeout, 1, 3600)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise PipelineError(f"{flag} must be a number from {low:g} to {high:g}, got {value!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= 20:
        raise PipelineError(f"--max-retries must be a whole number from 0 to 20, got {max_retries!r}")
    client = Client(model, base_url, api_key(api_key_env), rpm=rpm, max_retries=max_retries, timeout=timeout)
    return generate_candidates(scenes, images, out, subset, client, overwrite=overwrite)

