"""O3-D loading: the fixture's official layout, the join, the canonical schema, lazy images."""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from spatial_tasks.generators.o3d import standins as fixture

from spatial_tasks.o3d import load, markers, schema
from spatial_tasks.o3d.schema import SchemaError

CONFIGS = (*schema.SUBSETS, schema.QUESTIONS_CONFIG)


def _subset(fixture_dir: Path, name: str, load_kwargs: dict) -> datasets.Dataset:
    return datasets.load_dataset(str(fixture_dir), name, split="train", **load_kwargs)


# ---- fixture layout -------------------------------------------------------------------------


def test_fixture_card_declares_every_config_with_one_parquet(o3d_fixture_dir):
    text = (o3d_fixture_dir / "README.md").read_text()
    header = yaml.safe_load(text.split("---")[1])
    declared = {c["config_name"]: c["data_files"] for c in header["configs"]}
    assert set(declared) == set(CONFIGS)
    for name, files in declared.items():
        assert files == [{"split": "train", "path": f"{name}/train-00000-of-00001.parquet"}]
        assert (o3d_fixture_dir / files[0]["path"]).is_file()


@pytest.mark.parametrize("config", CONFIGS)
def test_fixture_configs_have_the_official_columns(o3d_fixture_dir, o3d_load_kwargs, config):
    ds = _subset(o3d_fixture_dir, config, o3d_load_kwargs)
    if config == schema.QUESTIONS_CONFIG:
        assert ds.column_names == list(schema.QUESTION_COLUMNS)
        return
    expected = set(schema.SUBSET_IMAGE_COLUMNS[config]) | set(schema.SUBSET_METADATA_COLUMNS[config])
    assert set(ds.column_names) == expected
    for col in schema.SUBSET_IMAGE_COLUMNS[config]:
        assert isinstance(ds.features[col], datasets.Image)
    assert len(ds) == fixture.DEFAULT_COUNTS[config]


def test_fixture_metadata_values_look_like_the_release(o3d_fixture_dir, o3d_load_kwargs):
    kb0 = _subset(o3d_fixture_dir, "kb-0cue", o3d_load_kwargs)
    assert set(kb0["odd_position"]) == {"near", "far", "none"}
    assert set(kb0["cues"]) == {"[]"}
    assert all(re.fullmatch(r"\{'min': [\d.]+, 'max': [\d.]+\}", s) for s in kb0["depth_scale"])
    kb2 = _subset(o3d_fixture_dir, "kb-2cue", o3d_load_kwargs)
    assert all(re.fullmatch(r"\['[A-Z]{2}', '[A-Z]{2}'\]", s) for s in kb2["cues"])
    real = _subset(o3d_fixture_dir, "real-012cue", o3d_load_kwargs)
    assert all(s.startswith("(") for s in real["cues"])  # the real metadata uses tuple reprs
    crops = _subset(o3d_fixture_dir, "real-012cue-cropped", o3d_load_kwargs)
    assert all(schema.crop_tag(n) for n in crops["image_name"])
    depth = kb0[0]["depth_map"]
    assert depth.mode == "L"


def test_fixture_is_deterministic_given_a_seed(tmp_path):
    a = fixture.build_fixture(tmp_path / "a", seed=3, counts={"kb-1cue": 4, "real-mcue": 2})
    b = fixture.build_fixture(tmp_path / "b", seed=3, counts={"kb-1cue": 4, "real-mcue": 2})
    c = fixture.build_fixture(tmp_path / "c", seed=4, counts={"kb-1cue": 4, "real-mcue": 2})
    for config in ("kb-1cue", "real-mcue", "visual_questions"):
        path = f"{config}/{fixture.PARQUET_NAME}"
        assert pq.read_table(a / path).equals(pq.read_table(b / path))
    assert not pq.read_table(a / "kb-1cue" / fixture.PARQUET_NAME).equals(
        pq.read_table(c / "kb-1cue" / fixture.PARQUET_NAME))
    assert (a / "README.md").read_text() == (b / "README.md").read_text()


def test_fixture_questions_follow_the_prompt_format(o3d_fixture_dir, o3d_load_kwargs):
    vq = _subset(o3d_fixture_dir, "visual_questions", o3d_load_kwargs)
    form = re.compile(r".+ A\. [^.]+\. B\. [^.]+\. Answer A or B\.")
    for row in vq:
        assert form.fullmatch(row["question"]), row["question"]
        if row["is_marked"]:
            assert row["ques_clarity"] == 4.0 and "red circle" in row["question"]
        else:
            assert row["ques_clarity"] in (2.0, 3.0, 3.5) and "red circle" not in row["question"]


def test_fallback_prompt_space_has_1026_prompts(monkeypatch):
    monkeypatch.setitem(sys.modules, "spatial_tasks.o3d.prompts", None)  # as if prompts.py were absent
    pools = fixture.prompt_pools()["synthetic"]
    assert sum(len(set(p)) for p in pools.values()) == 1026
    assert len(pools["highest"]) == 18


def test_fixture_questions_come_from_the_prompt_module_when_present(o3d_fixture_dir, o3d_load_kwargs):
    prompts = pytest.importorskip("spatial_tasks.o3d.prompts")
    known = {p.text for p in prompts.prompt_space()} | {p.text for p in prompts.real_prompt_space()}
    vq = _subset(o3d_fixture_dir, "visual_questions", o3d_load_kwargs)
    for row in vq:
        if row["subset_name"] != "real-012cue-cropped" or row["is_marked"]:
            assert row["question"] in known


# ---- canonical docs ---------------------------------------------------------------------------


def test_docs_have_the_canonical_schema_and_no_images(o3d_docs):
    assert o3d_docs.features == schema.DOC_FEATURES
    assert not any(isinstance(f, datasets.Image) for f in o3d_docs.features.values())


def test_one_doc_per_question_in_order(o3d_docs, o3d_fixture_dir, o3d_load_kwargs):
    vq = _subset(o3d_fixture_dir, "visual_questions", o3d_load_kwargs)
    assert len(o3d_docs) == len(vq)
    assert o3d_docs["question"] == vq["question"]
    assert o3d_docs["image_name"] == vq["image_name"]
    assert len(set(o3d_docs["question_id"])) == len(o3d_docs)


def test_join_points_at_the_right_subset_row(o3d_docs, o3d_fixture_dir, o3d_load_kwargs):
    subsets = {name: _subset(o3d_fixture_dir, name, o3d_load_kwargs) for name in schema.SUBSETS}
    for doc in o3d_docs:
        row = subsets[doc["subset_name"]].select_columns(["image_name", "odd_position"])[doc["subset_row"]]
        assert row["image_name"] == doc["image_name"]
        assert row["odd_position"] == doc["odd_position"]


def test_image_level_fields(o3d_docs):
    by_subset = {}
    for doc in o3d_docs:
        by_subset.setdefault(doc["subset_name"], []).append(doc)
    for doc in by_subset["kb-2cue"]:
        assert doc["synthetic"] and doc["image_family"] == "synthetic"
        assert doc["num_cues"] == 2 and doc["cues"] == sorted(doc["cues"])
        assert doc["cue_key"] == "+".join(doc["cues"]) and doc["cue_strength"] in (1.0, 2.0)
        assert doc["depth_min"] < doc["depth_max"] and doc["num_distractors"] == 4
        assert doc["env_cat"] in ("basic", "hdri") and doc["obj_cat"] in ("kubasic", "gso")
    for doc in by_subset["kb-0cue"]:
        assert doc["cues"] == [] and doc["cue_key"] == "none" and doc["cue_strength"] is None
    for doc in by_subset["real-012cue"]:
        assert not doc["synthetic"] and doc["released_family"] == "o3d-real"
        assert doc["depth_min"] is None and doc["num_cues"] in (0, 1, 2)
    for doc in by_subset["real-mcue"]:
        assert doc["num_distractors"] >= 2 and doc["obj_id"] in fixture.MCUE_TYPES
        assert doc["num_cues"] >= 1 and doc["cue_strength"] is None


def test_ground_truth_and_scored_flag(o3d_docs):
    counts = Counter((d["gt_position"], d["gt_label"], d["scored"]) for d in o3d_docs)
    assert set(counts) == {("near", "closer", True), ("far", "farther", True), ("none", "none", False)}
    assert all(d["subset_name"] == "kb-0cue" for d in o3d_docs if not d["scored"])


def test_clarity_levels(o3d_docs):
    for doc in o3d_docs:
        assert schema.CLARITY_LEVELS[doc["ques_clarity"]] == doc["clarity_level"]
        assert (doc["clarity_level"] == "highest") == doc["is_marked"]


def test_cropped_ground_truth_follows_the_tag_and_the_asked_side(o3d_docs):
    crops = [d for d in o3d_docs if d["subset_name"] == "real-012cue-cropped"]
    assert crops
    for doc in crops:
        side, depth = schema.crop_tag(doc["image_name"])
        assert (doc["crop_side"], doc["crop_depth"]) == (side, depth)
        assert doc["odd_position"] == "far"  # copied from the uncropped photo; the tag wins
        if doc["is_marked"]:
            assert doc["question_side"] is None and doc["gt_position"] == depth
        else:
            other = {"near": "far", "far": "near"}[depth]
            assert doc["gt_position"] == (depth if doc["question_side"] == side else other)


# ---- parsing helpers --------------------------------------------------------------------------


@pytest.mark.parametrize("raw, cues", [
    ("['HP', 'SA']", ["HP", "SA"]), ("['SA', 'HP']", ["HP", "SA"]), ("[]", []), ("()", []),
    ("('OC',)", ["OC"]), ("('OC','HP')", ["HP", "OC"]), (None, []), ("", []), (["RS"], ["RS"]),
])
def test_parse_cues(raw, cues):
    assert schema.parse_cues(raw) == cues


def test_parse_cues_rejects_garbage():
    with pytest.raises(SchemaError, match="cues"):
        schema.parse_cues("HP and SA")


def test_parse_depth_scale():
    assert schema.parse_depth_scale("{'min': 0.5909724831581116, 'max': 67.2027359008789}") == (
        0.5909724831581116, 67.2027359008789)
    assert schema.parse_depth_scale(None) == (None, None)
    with pytest.raises(SchemaError, match="depth_scale"):
        schema.parse_depth_scale("{'lo': 1}")


@pytest.mark.parametrize("name, tag", [
    ("img_0606-tlfar.jpg", ("l", "far")), ("img_0606-trnear.jpg", ("r", "near")),
    ("img_0613-augmented-mkbs-augmented-mkrc-trnear.jpg", ("r", "near")),
    ("img_0793-tlfar-augmented-ml.jpg", ("l", "far")), ("img_0606.jpg", None),
    ("260116203749_far_HPTG.png", None),
])
def test_crop_tag(name, tag):
    assert schema.crop_tag(name) == tag


@pytest.mark.parametrize("odd, side, depth, asked, gt", [
    ("near", None, None, None, "near"), ("none", None, None, None, "none"),
    ("far", "l", "near", None, "near"), ("far", "l", "far", "l", "far"),
    ("far", "l", "far", "r", "near"), ("far", "r", "near", "l", "far"),
])
def test_ground_truth_position(odd, side, depth, asked, gt):
    assert schema.ground_truth_position(odd, side, depth, asked) == gt


def test_question_side():
    assert schema.question_side("Answer a question about the left object. Is the object ...") == "l"
    assert schema.question_side("Answer a question about the right object. Is ...") == "r"
    assert schema.question_side("Is the object in the middle behind the other objects?") is None


# ---- images -----------------------------------------------------------------------------------


def _first(docs, **want):
    for doc in docs:
        if all(doc[k] == v for k, v in want.items()):
            return doc
    raise AssertionError(f"no doc with {want}")


@pytest.mark.parametrize("subset, marked, column", [
    ("kb-1cue", False, "image"), ("real-012cue", False, "augmented_image"),
    ("real-012cue", True, "marked_image"), ("real-012cue-cropped", False, "augmented_image"),
    ("real-012cue-cropped", True, "marked_image"), ("real-mcue", False, "image"),
    ("real-mcue", True, "marked_image"),
])
def test_image_for_uses_the_official_column(o3d_docs, o3d_fixture_dir, o3d_load_kwargs, subset, marked, column):
    doc = _first(o3d_docs, subset_name=subset, is_marked=marked)
    assert doc["image_column"] == column and not doc["draw_markers"]
    expected = _subset(o3d_fixture_dir, subset, o3d_load_kwargs)[doc["subset_row"]][column].convert("RGB")
    got = load.image_for(doc)
    assert got.mode == "RGB"
    assert np.array_equal(np.asarray(got), np.asarray(expected))
    assert load.doc_to_visual(doc)[0].size == got.size


def test_marked_synthetic_images_are_drawn_from_masks(o3d_docs):
    doc = _first(o3d_docs, subset_name="kb-1cue", is_marked=True)
    assert doc["draw_markers"] and doc["image_column"] == "image"
    marked = np.asarray(load.image_for(doc))
    plain = np.asarray(load.image_for(doc, marked=False))
    assert marked.shape == plain.shape and not np.array_equal(marked, plain)
    red = (marked == markers.TARGET_COLOR).all(axis=-1)
    blue = (marked == markers.DISTRACTOR_COLOR).all(axis=-1)
    assert red.sum() > 100 and blue.sum() > 4 * 100


def test_image_for_can_override_marking(o3d_docs):
    plain_doc = _first(o3d_docs, subset_name="real-012cue", is_marked=False)
    marked_doc = _first(o3d_docs, subset_name="real-012cue", is_marked=True, image_name=plain_doc["image_name"])
    assert np.array_equal(np.asarray(load.image_for(plain_doc, marked=True)), np.asarray(load.image_for(marked_doc)))
    assert np.array_equal(np.asarray(load.image_for(marked_doc, marked=False)), np.asarray(load.image_for(plain_doc)))


def test_masks_for(o3d_docs):
    doc = _first(o3d_docs, subset_name="kb-0cue")
    target, distractors = load.masks_for(doc)
    assert target.dtype == bool and target.any()
    assert len(distractors) == 4 and all(m.shape == target.shape for m in distractors)
    assert not any((m & target).any() for m in distractors)


# ---- in-memory sources, filters, laziness -----------------------------------------------------


@pytest.fixture
def o3d_memory(o3d_fixture_dir, o3d_load_kwargs):
    subsets = {name: _subset(o3d_fixture_dir, name, o3d_load_kwargs) for name in schema.SUBSETS}
    questions = _subset(o3d_fixture_dir, "visual_questions", o3d_load_kwargs)
    return questions, subsets


def test_build_docs_from_in_memory_datasets(o3d_memory, o3d_docs):
    questions, subsets = o3d_memory
    docs = load.build_docs(questions, subsets)
    assert docs["source"][0].startswith(load.MEMORY_PREFIX)
    assert docs.remove_columns("source").to_list() == o3d_docs.remove_columns("source").to_list()
    doc = _first(docs, subset_name="kb-2cue", is_marked=False)
    assert load.image_for(doc).size == (128, 96)


def test_build_docs_filters(o3d_memory):
    questions, subsets = o3d_memory
    docs = load.build_docs(questions, subsets, subset_names=["kb-1cue", "real-mcue"], marked=True)
    assert set(docs["subset_name"]) == {"kb-1cue", "real-mcue"} and all(docs["is_marked"])
    assert len(docs) == 2 * (fixture.DEFAULT_COUNTS["kb-1cue"] + fixture.DEFAULT_COUNTS["real-mcue"])


def test_filtered_question_dataset_is_respected(o3d_memory):
    questions, subsets = o3d_memory
    only = questions.filter(lambda r: r["subset_name"] == "kb-no-lp")
    docs = load.build_docs(only, subsets)
    assert set(docs["subset_name"]) == {"kb-no-lp"} and len(docs) == len(only)


def test_process_docs_loads_only_the_needed_subsets(o3d_fixture_dir, o3d_load_kwargs, tmp_path):
    copy = shutil.copytree(o3d_fixture_dir, tmp_path / "copy")  # a source nobody registered yet
    questions = _subset(copy, "visual_questions", o3d_load_kwargs)
    docs = load.process_docs(questions, source=str(copy), subsets=["kb-1cue"], load_kwargs=o3d_load_kwargs)
    assert set(docs["subset_name"]) == {"kb-1cue"}
    assert load.get_source(str(copy)).loaded() == ("kb-1cue",)
    load.image_for(docs[0])
    assert load.get_source(str(copy)).loaded() == ("kb-1cue",)


def test_process_docs_source_from_environment(o3d_fixture_dir, o3d_load_kwargs, monkeypatch):
    monkeypatch.setenv(schema.SOURCE.env, str(o3d_fixture_dir))
    questions = _subset(o3d_fixture_dir, "visual_questions", o3d_load_kwargs)
    docs = load.process_docs(questions, subsets=["real-012cue"], marked=False)
    assert set(docs["source"]) == {str(o3d_fixture_dir.resolve())}
    assert len(docs) == 2 * fixture.DEFAULT_COUNTS["real-012cue"]


def test_unregistered_memory_source_is_a_clear_error(o3d_docs):
    doc = dict(o3d_docs[0], source="memory:0000")
    with pytest.raises(KeyError, match="not registered"):
        load.image_for(doc)


# ---- what each task needs (bad inputs: tests/hardening/test_o3d_data.py) -----------------------


def test_missing_mask_column_for_markers(o3d_memory):
    questions, subsets = o3d_memory
    subsets["kb-1cue"] = subsets["kb-1cue"].remove_columns("dist_seg")
    with pytest.raises(SchemaError, match=r"subset 'kb-1cue'.*lacks \['dist_seg'\] needed to draw markers"):
        load.build_docs(questions, subsets)
    docs = load.build_docs(questions, subsets, marked=False)  # unmarked questions need no masks
    assert "kb-1cue" in set(docs["subset_name"])


def test_cropped_subset_without_odd_position_uses_the_tag(o3d_memory, o3d_docs):
    questions, subsets = o3d_memory
    subsets["real-012cue-cropped"] = subsets["real-012cue-cropped"].remove_columns("odd_position")
    docs = load.build_docs(questions, subsets, subset_names=["real-012cue-cropped"])
    expected = [d["gt_position"] for d in o3d_docs if d["subset_name"] == "real-012cue-cropped"]
    assert docs["gt_position"] == expected
    assert docs["odd_position"] == docs["crop_depth"]


def test_is_marked_stored_as_text(o3d_memory):
    questions, subsets = o3d_memory
    as_text = questions.cast_column("is_marked", datasets.Value("string"))
    assert set(as_text["is_marked"]) == {"true", "false"}
    docs = load.build_docs(as_text, subsets, marked=True)
    assert len(docs) == sum(questions["is_marked"]) and all(docs["is_marked"])


def test_filters_that_keep_nothing_give_an_empty_docs_dataset(o3d_memory):
    questions, subsets = o3d_memory
    docs = load.build_docs(questions, subsets, subset_names=["no-such-subset"])
    assert len(docs) == 0 and docs.features == schema.DOC_FEATURES


def test_image_and_question_fields_partition_the_schema():
    row = {"image_name": "x_far_HP.png", "odd_position": "far", "cues": "['HP']", "cue_strength": 1.0,
           "depth_scale": "{'min': 1.0, 'max': 2.0}"}
    assert tuple(schema.normalise_image_row("kb-1cue", row, ("image_name",))) == schema.IMAGE_FIELDS
    assert (set(schema.IMAGE_FIELDS) | set(schema.QUESTION_FIELDS)
            | {"source", "subset_name", "image_name", "question"}) == set(schema.DOC_FIELDS)
