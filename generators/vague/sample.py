"""The bundled VAGUE sample (tasks/vague/sample): 8 items written by hand for this project, with
drawn stand-in scenes (figures for people, boxes for objects), in both published layouts:

* the GitHub layout, in ``github/``: ``vcr_4_sample.json`` (VAGUE 2.0 keys) and
  ``ego4d_4_sample.json`` (1.0 keys) with the person-tagged images ``images/<image_name>_annot.jpg``;
* the Hub release's layout: ``hub/data/train-00000-of-00001.parquet`` with the published columns
  (an embedded image, the strings, the ``mcq`` and ``meta`` structs; no subset column: VCR names
  hold '@', Ego4D names do not). Its VCR images carry the person tags, its Ego4D images do not,
  so both the tagged and the untagged case are read in every run.

VCR and Ego4D frames cannot be shipped (their licences): the sample exercises the formats and the
pipeline, not the benchmark.

    python -m spatial_tasks.generators.vague.sample tasks/vague/sample
"""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

from spatial_tasks.vague.person_tags import draw_person_tags
from spatial_tasks.vague.schema import IMAGE_SUFFIX

SIZE = (320, 240)
# (image_name, people, objects, direct, indirect, solution, correct, fake scene, superficial, wrong entity,
#  caption, fake caption)
ITEMS = {
    "vcr": [
        ("0001_Sample_Parking@0", 2, ["sedan", "sign"], "Hey, person1, you should move the sedan from the handicapped parking spot.",
         "Hey person1, spot the difference, this parking's a bit too special, isn't it?", "(person1, move, sedan)",
         "Move the sedan out of the handicapped parking spot.", "Take a photo of the unusual parking lot.",
         "Find the difference between two parking spots.", "Move the motorcycle out of the parking spot.",
         "Two people stand next to a sedan parked in a spot marked with a sign.",
         "Two people admire an unusual art installation in a parking lot."),
        ("0002_Sample_Kitchen@1", 3, ["stove", "pot"], "person2, turn off the stove before the pot boils over.",
         "person2, I think the pot is trying to escape.", "(person2, turn off, stove)",
         "Turn off the stove under the boiling pot.", "Catch the pot before it falls off the shelf.",
         "Help the pot find a way out of the kitchen.", "Turn off the oven timer.",
         "Three people are in a kitchen where a pot sits on a lit stove.",
         "Three people watch a pot balanced on a high shelf."),
        ("0003_Sample_Office@2", 2, ["window", "papers"], "person1, close the window so the papers stop flying around.",
         "person1, our paperwork is learning to fly today.", "(person1, close, window)",
         "Close the window to stop the papers from blowing away.", "Open the window to let in fresh air.",
         "Teach the papers how to fly.", "Close the office door.",
         "Two people sit at desks near an open window with papers on the table.",
         "Two people sit in a stuffy office with the windows shut."),
        ("0004_Sample_Dinner@0", 4, ["bottle", "glass"], "person3, please pour some water into person1's glass.",
         "person3, person1's glass looks like a desert.", "(person3, pour, water)",
         "Pour water into person1's empty glass.", "Bring person1 a towel because the glass spilled.",
         "Put sand into person1's glass.", "Pour juice from the jug into the glass.",
         "Four people sit at a dinner table with a bottle and an empty glass.",
         "Four people sit at a table where a glass has just been knocked over."),
    ],
    "ego4d": [
        ("ego_sample_A_frame0012", 2, ["door", "box"], "person2, hold the door open for me, my hands are full.",
         "person2, my arms are auditioning for a moving company.", "(person2, hold, door)",
         "Hold the door open for the speaker carrying the box.", "Call a moving company for the furniture.",
         "Watch the speaker's audition.", "Hold the elevator for the speaker.",
         "Two people stand by a door; one carries a large box.",
         "Two people wait next to a pile of furniture in a hallway."),
        ("ego_sample_B_frame0003", 1, ["lamp", "book"], "person1, turn on the lamp so you can read.",
         "person1, are you reading by moonlight?", "(person1, turn on, lamp)",
         "Turn on the lamp to read the book.", "Close the curtains so the moon is hidden.",
         "Go outside and read under the moon.", "Turn on the ceiling fan.",
         "A person reads a book in a dim room next to a switched-off lamp.",
         "A person reads a book next to a bright window at night."),
        ("ego_sample_C_frame0007", 3, ["trash can", "bag"], "person3, take out the trash bag, it is full.",
         "person3, the trash can is about to explode.", "(person3, take out, bag)",
         "Take the full trash bag out of the can.", "Move away from the dangerous device.",
         "Check whether the trash can will explode.", "Take out the recycling bin.",
         "Three people are in a room where a full trash bag sticks out of a can.",
         "Three people stand around a ticking device on the floor."),
        ("ego_sample_D_frame0000", 2, ["tap", "sink"], "person1, turn off the tap, the water is running.",
         "person1, are we trying to refill the ocean?", "(person1, turn off, tap)",
         "Turn off the running tap at the sink.", "Take the boat out to the ocean.",
         "Fill the ocean with more water.", "Turn off the shower head.",
         "Two people stand at a sink where the tap is running.",
         "Two people stand on a pier looking at the sea."),
    ],
}
KEYS = {"vcr": ("1_correct", "2_fake_scene", "3_surface_understanding", "4_wrong_entity"),
        "ego4d": ("1_correct", "2_incorrect_fake_scene", "3_incorrect_surface_understanding", "4_incorrect_entity")}


def _scene(seed: int, people: int, objects: list[str]) -> tuple[Image.Image, list[list[float]]]:
    rng = random.Random(seed)
    image = Image.new("RGB", SIZE, (200 + rng.randrange(40), 190 + rng.randrange(40), 170 + rng.randrange(40)))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 170, SIZE[0], SIZE[1]], fill=(120, 110, 100))
    for k, name in enumerate(objects):
        x = 20 + 150 * k + rng.randrange(20)
        draw.rectangle([x, 120, x + 90, 175], fill=(60 + 60 * k, 90, 140), outline=(20, 20, 20))
        draw.text((x + 4, 124), name, fill=(255, 255, 255))
    boxes = []
    for k in range(people):
        x = 15 + k * (SIZE[0] - 40) // max(people, 1) + rng.randrange(10)
        box = [float(x), 60.0, float(x + 34), 200.0]
        draw.ellipse([x + 7, 60, x + 27, 80], fill=(230, 190, 160))
        draw.rectangle([x + 4, 80, x + 30, 200], fill=(40 + 50 * k % 200, 70, 120))
        boxes.append(box)
    return image, boxes


# The Hub release's columns (HazelNam/vague-bench, as published): no annot_link, float32 sizes and
# boxes, int32 ratings, VAGUE 2.0 option keys.
HUB_FEATURES = datasets.Features({
    "image": datasets.Image(),
    "image_name": datasets.Value("string"), "direct": datasets.Value("string"),
    "indirect": datasets.Value("string"), "solution": datasets.Value("string"),
    "mcq": {"1_correct": datasets.Value("string"), "2_fake_scene": datasets.Value("string"),
            "3_surface_understanding": datasets.Value("string"), "4_wrong_entity": datasets.Value("string"),
            "ordering": datasets.List(datasets.Value("string"))},
    "meta": {"caption": datasets.Value("string"), "ram_entity": datasets.List(datasets.Value("string")),
             "img_size": {"width": datasets.Value("float32"), "height": datasets.Value("float32")},
             "person_bbox": datasets.List(datasets.List(datasets.Value("float32"))),
             "rating": {"direct": datasets.Value("int32"), "indirect": datasets.Value("int32")},
             "fake_caption": datasets.Value("string")},
})


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _hub_row(item: dict, image: bytes) -> dict:
    keys = dict(zip(KEYS["ego4d"], KEYS["vcr"]))  # 1.0 keys -> the release's 2.0 keys
    mcq = {keys.get(k, k): v for k, v in item["mcq"].items()}
    meta = {k: v for k, v in item["meta"].items() if k != "annot_link"}
    return {**{k: item[k] for k in ("image_name", "direct", "indirect", "solution")}, "mcq": mcq, "meta": meta,
            "image": {"bytes": image, "path": None}}


def write_sample(folder: Path) -> list[Path]:
    folder = Path(folder)
    github = folder / "github"
    (github / "images").mkdir(parents=True, exist_ok=True)
    written = []
    hub_rows = []
    for subset, rows in ITEMS.items():
        items = []
        for k, (name, people, objects, direct, indirect, solution, *options, caption, fake) in enumerate(rows):
            scene, boxes = _scene(k + (100 if subset == "ego4d" else 0), people, objects)
            tagged, _ = draw_person_tags(scene, boxes)
            path = github / "images" / f"{name}{IMAGE_SUFFIX}"
            path.write_bytes(_jpeg(tagged))
            written.append(path)
            ordering = random.Random(f"{subset}{k}").sample(["A", "B", "C", "D"], 4)
            items.append({
                "image_name": name, "direct": direct, "indirect": indirect, "solution": solution,
                "mcq": {**dict(zip(KEYS[subset], options)), "ordering": ordering},
                "meta": {"caption": caption, "ram_entity": objects, "img_size": {"width": SIZE[0], "height": SIZE[1]},
                         "person_bbox": boxes, "annot_link": "", "rating": {"direct": 5, "indirect": 4},
                         "fake_caption": fake},
            })
            hub_rows.append(_hub_row(items[-1], _jpeg(tagged if subset == "vcr" else scene)))
        path = github / f"{subset}_{len(items)}_sample.json"
        path.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    hub = folder / "hub" / "data" / "train-00000-of-00001.parquet"
    hub.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(hub_rows, features=HUB_FEATURES).to_parquet(str(hub))
    written.append(hub)
    return written


if __name__ == "__main__":
    for p in write_sample(Path(sys.argv[1])):
        print(p)
