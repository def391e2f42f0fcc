"""Both published VAGUE layouts -> canonical docs: the Hub release's parquet (a stand-in built here
from the published schema) and the GitHub item files (2.0 and 1.0 keys) with their images; bad
items named by file, item and key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image
from spatial_tasks.generators.vague.sample import HUB_FEATURES, ITEMS

from spatial_tasks.common.images import ImageError, open_ref
from spatial_tasks.common.origin import origin_for
from spatial_tasks.vague import load
from spatial_tasks.vague import tasks as T
from spatial_tasks.vague.person_tags import draw_person_tags
from spatial_tasks.vague.schema import DOC_FIELDS

SAMPLE = Path("tasks/vague/sample")
GITHUB = SAMPLE / "github"
HUB_FILE = "data/train-00000-of-00001.parquet"


def hub_stand_in(root: Path, rows: list[dict] | None = None) -> Path:
    """A folder shaped like HazelNam/vague-bench: one parquet file under data/ in the published
    schema (HUB_FEATURES), from the bundled sample's rows, or ``rows``."""
    rows = rows if rows is not None else list(datasets.Dataset.from_parquet(str(SAMPLE / "hub" / HUB_FILE)))
    (root / "data").mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=HUB_FEATURES).to_parquet(str(root / HUB_FILE))
    return root


def load_hub(root: Path, tmp_path: Path) -> list[dict]:
    """The folder loaded as lmms-eval loads the release (datasets' own discovery: default config,
    split train), then mapped."""
    ds = datasets.load_dataset(str(root), split="train", cache_dir=str(tmp_path / "hf"))
    return load.docs_from_table(ds, origin_for(ds, str(root), None, "train"))


def test_the_hub_layout_loads_as_published(tmp_path):
    root = hub_stand_in(tmp_path / "vague-bench")
    assert datasets.get_dataset_config_names(str(root)) == ["default"]
    assert datasets.get_dataset_split_names(str(root)) == ["train"]
    docs = load_hub(root, tmp_path)
    assert [d["subset"] for d in docs] == ["vcr"] * 4 + ["ego4d"] * 4  # '@' in image_name: VCR
    assert load.subset_counts(docs) == {"vcr": 4, "ego4d": 4}
    for doc in docs:
        assert set(doc) == set(DOC_FIELDS)
        assert doc["image"]["file"] and doc["image"]["bytes"] is None  # the embedded image, read where it is stored
    first = docs[0]
    assert first["image_name"] == ITEMS["vcr"][0][0] and first["correct_intention"] == ITEMS["vcr"][0][6]
    assert first["width"] == 320.0 and len(first["person_boxes"]) == 2
    assert open_ref(first["image"]).size == (320, 240)


def test_missing_person_tags_are_detected_and_drawn(tmp_path):
    docs = load_hub(hub_stand_in(tmp_path / "vb"), tmp_path)
    assert {d["subset"]: d["tags"] for d in docs} == {"vcr": "in image", "ego4d": "drawn"}
    ego = next(d for d in docs if d["subset"] == "ego4d")
    shown = T.doc_to_visual(ego)[0]
    expected, _ = draw_person_tags(open_ref(ego["image"]), ego["person_boxes"])
    assert np.array_equal(np.asarray(shown), np.asarray(expected))  # our tags, drawn from the item's boxes
    vcr = next(d for d in docs if d["subset"] == "vcr")
    assert np.array_equal(np.asarray(T.doc_to_visual(vcr)[0]), np.asarray(open_ref(vcr["image"])))  # as published


def test_subset_counts_are_reported_and_checked_on_a_release_sized_table(log_messages):
    load.report_subsets([{"subset": "vcr", "tags": "in image"}] * 1144 + [{"subset": "ego4d", "tags": "drawn"}] * 533,
                        "copy", 1677)
    assert log_messages == ["copy: VAGUE items: 1144 VCR + 533 Ego4D; person tags drawn by spatial-tasks on 533 "
                            "image(s) that had none"]
    log_messages.clear()
    load.report_subsets([{"subset": "vcr", "tags": "in image"}] * 1677, "copy", 1677)
    assert "the subsets are {'vcr': 1677, 'ego4d': 0}, not {'vcr': 1144, 'ego4d': 533}" in log_messages[-1]


@pytest.mark.parametrize(("column", "value", "match"), [
    ("mcq", None, r"row 2 \('0003_Sample_Office@2'\), key 'mcq': missing or not an object"),
    ("indirect", "", r"row 2 \('0003_Sample_Office@2'\), key 'indirect': missing or empty"),
    ("solution", "person1 moves", r"row 2 \('0003_Sample_Office@2'\), key 'solution': 'person1 moves' is not a"),
])
def test_bad_hub_rows_name_the_file_and_row(tmp_path, column, value, match):
    rows = list(datasets.Dataset.from_parquet(str(SAMPLE / "hub" / HUB_FILE)))
    rows[2][column] = value
    root = hub_stand_in(tmp_path / "vb", rows)
    with pytest.raises(load.SourceError, match=r"train-00000-of-00001.parquet, " + match):
        load_hub(root, tmp_path)


def test_a_hub_table_without_the_release_columns_is_named(tmp_path):
    ds = datasets.Dataset.from_dict({"image_name": ["a"], "question": ["q"]})
    with pytest.raises(load.SourceError, match=r"missing column\(s\) \['image', 'indirect', 'solution', 'mcq'\].*inspect"):
        load.docs_from_table(ds)


@pytest.fixture
def release(tmp_path) -> Path:
    """The bundled sample laid out like the authors' release: item files at the top, images apart."""
    root = tmp_path / "vague"
    shutil.copytree(GITHUB / "images", root / "vcr_images")
    shutil.copy(GITHUB / "vcr_4_sample.json", root / "vcr_1144_final.json")
    shutil.copy(GITHUB / "ego4d_4_sample.json", root / "ego4d_533_final.json")
    return root


def _edit(path: Path, index: int, change) -> None:
    items = json.loads(path.read_text())
    change(items[index])
    path.write_text(json.dumps(items))


def test_items_map_onto_docs(release):
    docs = load.docs_from_folder(release)
    assert len(docs) == 8 and {d["subset"] for d in docs} == {"vcr", "ego4d"}
    items = {**{i["image_name"]: i for i in json.loads((release / "vcr_1144_final.json").read_text())},
             **{i["image_name"]: i for i in json.loads((release / "ego4d_533_final.json").read_text())}}
    for doc in docs:
        assert set(doc) == set(DOC_FIELDS)
        item = items[doc["image_name"]]
        mcq = item["mcq"]
        assert doc["answer"] == mcq["ordering"][0] and doc["letters"] == ["A", "B", "C", "D"]
        assert doc["option_texts"][doc["letters"].index(doc["answer"])] == mcq["1_correct"] == doc["correct_intention"]
        types = dict(zip(doc["letters"], doc["option_types"]))
        assert [types[letter] for letter in mcq["ordering"]] == ["correct", "FS", "SU", "NE"]  # 2.0 and 1.0 keys
        assert doc["listener"] == item["solution"].split(",")[0][1:]  # the authors' rule
        assert doc["caption"] == item["meta"]["caption"] and doc["tags"] == "in image"
        assert Path(doc["image"]["path"]).name == doc["image_name"] + "_annot.jpg"


@pytest.mark.parametrize(("change", "match"), [
    (lambda i: i.pop("indirect"), r"key 'indirect': missing or empty"),
    (lambda i: i["mcq"].pop("3_surface_understanding"), r"key 'mcq.3_surface_understanding': missing \(also accepted"),
    (lambda i: i["mcq"].__setitem__("ordering", ["A", "A", "B", "C"]), r"key 'mcq.ordering': .* not a permutation"),
    (lambda i: i.__setitem__("solution", "person1 moves the car"), r"key 'solution': .* not a \(subject, action, object\)"),
    (lambda i: i["meta"].__setitem__("person_bbox", [[1, 2, 3]]), r"key 'meta.person_bbox\[0\]'"),
    (lambda i: i["meta"]["rating"].__setitem__("indirect", 9), r"key 'meta.rating.indirect': 9 is not a rating 1-5"),
    (lambda i: i["mcq"].__setitem__("2_fake_scene", i["mcq"]["1_correct"]), r"key 'mcq': two options have the same text"),
])
def test_bad_items_are_named(release, change, match):
    _edit(release / "vcr_1144_final.json", 2, change)
    with pytest.raises(load.SourceError, match=r"vcr_1144_final.json, item 2 \('0003_Sample_Office@2'\), " + match):
        load.docs_from_folder(release)


def test_a_missing_image_names_the_item_and_the_file(release):
    (release / "vcr_images" / "0002_Sample_Kitchen@1_annot.jpg").unlink()
    with pytest.raises(load.SourceError, match=r"item 1 \('0002_Sample_Kitchen@1'\): image "
                                               r"0002_Sample_Kitchen@1_annot.jpg not found"):
        load.docs_from_folder(release)


def test_a_truncated_image_is_named(release):
    path = release / "vcr_images" / "0004_Sample_Dinner@0_annot.jpg"
    path.write_bytes(path.read_bytes()[:400])
    with pytest.raises(ImageError, match=r"0004_Sample_Dinner@0_annot.jpg \(item vcr-00003\): (damaged or truncated|not a readable image)"):
        load.docs_from_folder(release)


def test_files_that_are_not_item_lists_are_named(release, tmp_path, log_messages):
    (release / "notes.json").write_text('{"not": "a list"}')
    assert len(load.docs_from_folder(release)) == 8
    assert any("not read (not lists of VAGUE items): notes.json" in m for m in log_messages)
    (release / "vcr_1144_final.json").write_text("[{")
    with pytest.raises(load.SourceError, match="not a readable JSON file"):
        load.docs_from_folder(release)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "other.json").write_text("[]")
    with pytest.raises(load.SourceError, match=r"no VAGUE item files .* found: \['other.json'\]"):
        load.docs_from_folder(empty)


def test_a_file_named_for_both_subsets_is_read_by_image_name(release):
    """Its items are read, each subset from its image_name ('@': VCR), never dropped."""
    shutil.move(release / "vcr_1144_final.json", release / "vcr_and_ego4d_items.json")
    docs = load.docs_from_folder(release)
    assert len(docs) == 8
    assert {d["image_name"]: d["subset"] for d in docs}["0001_Sample_Parking@0"] == "vcr"


# The item the authors' README shows (github.com/Hazel-Heejeong-Nam/VAGUE), verbatim: its "indirect"
# ends in two spaces, which the authors' prompts keep.
README_ITEM = {
    "image_name": "0013_Halloween_00.15.15.492-00.15.17.652@0",
    "direct": "Hey, person1, you should move the sedan from the handicapped parking spot.",
    "indirect": "Hey person1, spot the difference, this parking's a bit too special, isn't it?  ",
    "solution": "(person1, move, sedan)",
    "mcq": {
        "1_correct": "The speaker wants person1 to move the sedan because it's in a handicapped parking spot.",
        "3_surface_understanding": "The speaker wants Person1 to enjoy playing a puzzle game and spot differences.",
        "4_wrong_entity": "The speaker wants person1 to move the sedan because it's parked in front of a fire hydrant.",
        "ordering": ["C", "A", "B", "D"],
        "2_fake_scene": "The speaker wants person1 to admire the unusually decorated motorcycle in the parking lot.",
    },
    "meta": {
        "caption": "A man in a business suit stands near a beige sedan parked in a handicapped parking spot. The area "
                   "is surrounded by greenery and a building entrance is visible in the background.",
        "ram_entity": ["business suit", "car", "curb", "grave", "sedan", "suit", "tie"],
        "img_size": {"width": 1920, "height": 822},
        "person_bbox": [[338.989990234375, 112.2576904296875, 578.5294799804688, 717.6659545898438],
                        [1055.5440673828125, 233.45152282714844, 1131.0687255859375, 288.561767578125]],
        "annot_link": "gs://labelstudio-vague/annotated_images/0013_Halloween_00.15.15.492-00.15.17.652@0_annot.jpg",
        "rating": {"direct": 5, "indirect": 4},
        "fake_caption": "In a bustling supermarket parking lot ...",
    },
}


def test_the_authors_example_item(tmp_path):

    from spatial_tasks.vague import tasks as T

    (tmp_path / "vcr_1144_final.json").write_text(json.dumps([README_ITEM]))
    (tmp_path / "annotated_images").mkdir()
    image = tmp_path / "annotated_images" / f"{README_ITEM['image_name']}_annot.jpg"
    Image.new("RGB", (1920, 822), (90, 90, 90)).save(image)
    (doc,) = load.docs_from_folder(tmp_path)
    assert (doc["answer"], doc["listener"], doc["option_types"]) == ("C", "person1", ["FS", "SU", "correct", "NE"])
    prompt = T.doc_to_text_vlm(doc)
    assert "Utterance : Hey person1, spot the difference, this parking's a bit too special, isn't it?  \n[Choices]\n" \
           "A: The speaker wants person1 to admire the unusually decorated motorcycle in the parking lot.\n" in prompt
    assert "\nC: The speaker wants person1 to move the sedan because it's in a handicapped parking spot.\n" in prompt
    Image.new("RGB", (960, 411), (90, 90, 90)).save(image)  # not the stated img_size: the boxes would be wrong
    with pytest.raises(load.SourceError, match=r"key 'meta.img_size': 1920 x 822 but .* is 960 x 411"):
        load.docs_from_folder(tmp_path)
