"""The VAGUE construction pipeline end to end against a local OpenAI-compatible server with
scripted answers (the only fake: a remote API): five stages, retries, resume without repeated
calls, every raw response stored, Label Studio export/import with the keep thresholds, and a
dataset the benchmark's own loader reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from openai_server import StubHTTPError, image_urls, prompt_text
from PIL import Image
from spatial_tasks.generators.common.publish import upload_list
from spatial_tasks.generators.vague import pipeline

from spatial_tasks.vague import load
from lmms import SPATIAL_TASKS, run_cli



def scripted(body: dict) -> str:
    """One valid answer per stage, recognised by the prompt's wording."""
    text = prompt_text(body)
    if "Write one direct request" in text:
        return 'Sure: {"direct": "person1, close the window.", "solution": "(person1, close, window)", ' \
               '"caption": "Two people in an office with an open window."}'
    if "State what the speaker wants" in text:
        return '{"correct": "The speaker wants person1 to close the window."}'
    if "Write three indirect utterances" in text:
        return json.dumps({"candidates": [
            {"style": "sarcasm", "indirect": "person1, I love a breeze that steals my papers.",
             "superficial": "The speaker wants person1 to admire the breeze."},
            {"style": "humour", "indirect": "person1, our papers are learning to fly.",
             "superficial": "The speaker wants person1 to teach papers to fly."},
            {"style": "meme", "indirect": "person1, winter is coming, through that window.",
             "superficial": "The speaker wants person1 to watch a TV show."}]})
    if "invent a different scene" in text:
        return "```json\n" + json.dumps({"fake": [
            {"fake_caption": f"A windy beach {k}.", "fake_scene": f"The speaker wants person1 to fly a kite {k}."}
            for k in range(3)]}) + "\n```"
    if "is NOT in the image" in text:
        return '{"absent_object": "fan", "wrong_entity": "The speaker wants person1 to switch off the fan."}'
    return "?"


@pytest.fixture
def scenes(tmp_path):
    frames = tmp_path / "frames"
    frames.mkdir()
    entries = []
    for k in range(3):
        Image.new("RGB", (200, 120), (40 * k, 100, 150)).save(frames / f"scene{k}.jpg")
        entries.append({"image_name": f"scene{k}", "ram_entity": ["window", "desk", "papers"],
                        "person_bbox": [[10, 10, 60, 110], [120, 10, 180, 110]]})
    (tmp_path / "scenes.json").write_text(json.dumps(entries))
    return tmp_path / "scenes.json", frames


def _client(server, retries=2):
    return pipeline.Client("stub", server.base_url, "test", rpm=6000, max_retries=retries)


def _label(tasks_path: Path, ratings: dict[str, tuple[int, int, int]]) -> Path:
    """What a Label Studio JSON export of our tasks looks like once annotated."""
    tasks = json.loads(tasks_path.read_text())
    for task in tasks:
        direct, choice, indirect = ratings[task["data"]["image_name"]]
        task["annotations"] = [{"result": [
            {"from_name": "direct_rating", "to_name": "image", "type": "rating", "value": {"rating": direct}},
            {"from_name": "indirect_choice", "to_name": "image", "type": "choices", "value": {"choices": [str(choice)]}},
            {"from_name": "indirect_rating", "to_name": "image", "type": "rating", "value": {"rating": indirect}}]}]
    out = tasks_path.with_name("export.json")
    out.write_text(json.dumps(tasks))
    return out


def test_end_to_end(openai_server, scenes, tmp_path):
    openai_server.responder = scripted
    scenes_path, frames = scenes
    out = tmp_path / "out"
    tasks = pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    assert len(openai_server.requests) == 15  # 5 stages x 3 scenes
    with_image = [r for r in openai_server.requests if image_urls(r)]
    assert len(with_image) == 6  # the direct and the absent-object stages see the frame
    raw = json.loads((out / "_work" / "responses" / "scene1" / "fake_scene.json").read_text())
    assert raw["reply"]["text"].startswith("```json") and raw["parsed"]["fake"][0]["fake_caption"]

    # resume: nothing is asked again
    pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    assert len(openai_server.requests) == 15
    assert (out / "labelstudio" / "config.xml").read_text().count("<Rating") == 2

    export = _label(tasks, {"scene0": (5, 2, 4), "scene1": (3, 1, 5), "scene2": (4, 3, 2)})
    item_file = pipeline.build_dataset(out, export, seed=0)
    items = json.loads(item_file.read_text())
    assert item_file.name == "vcr_1_generated.json" and [i["image_name"] for i in items] == ["scene0"]
    item = items[0]  # direct 5 and indirect 4 kept; direct 3 or indirect 2 dropped (the paper's thresholds)
    assert item["indirect"] == "person1, our papers are learning to fly."  # the chosen candidate (2)
    assert item["mcq"]["3_surface_understanding"] == "The speaker wants person1 to teach papers to fly."
    assert item["mcq"]["2_fake_scene"] == "The speaker wants person1 to fly a kite 1."
    assert item["meta"]["rating"] == {"direct": 5, "indirect": 4} and item["meta"]["img_size"]["width"] == 200

    # issue 32, item 10: labels of a scene pass 1 did not make are refused, naming it
    stranger = _label(tasks, {"scene0": (5, 2, 4), "scene1": (3, 1, 5), "scene2": (4, 3, 2)})
    exported = json.loads(stranger.read_text())
    exported[2]["data"]["image_name"] = "scene9"
    stranger.write_text(json.dumps(exported))
    with pytest.raises(pipeline.PipelineError, match=r"1 labelled scene\(s\) that pass 1 did not make here: "
                                                     r"\['scene9'\] \(pass 1 made 3: \['scene0', 'scene1', 'scene2'\]\)"):
        pipeline.build_dataset(out, stranger, seed=0)
    assert json.loads(item_file.read_text()) == items  # the dataset it had is kept

    docs = load.docs_from_folder(out)  # the benchmark reads what the pipeline wrote
    assert len(docs) == 1 and docs[0]["listener"] == "person1"
    assert docs[0]["option_texts"][docs[0]["letters"].index(docs[0]["answer"])] == item["mcq"]["1_correct"]
    assert sorted(upload_list(out)) == ["README.md", "images/scene0_annot.jpg", "vcr_1_generated.json"]


def test_retries_and_resume_after_a_failure(openai_server, scenes, tmp_path):
    scenes_path, frames = scenes
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        if calls["n"] == 2:
            raise StubHTTPError(429, "rate limited")  # retried by the client
        return scripted(body)

    openai_server.responder = flaky
    out = tmp_path / "out"
    pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    assert len(openai_server.requests) == 16  # 15 answers + 1 rate-limited attempt

    # a run that dies half-way (the server fails from the 8th call: scene1's third stage) loses nothing
    # and repeats nothing
    out2 = tmp_path / "out2"
    answered = {"n": 0}

    def dying(body):
        if answered["n"] >= 7:
            raise StubHTTPError(500, "down")
        answered["n"] += 1
        return scripted(body)

    openai_server.responder = dying
    openai_server.clear()
    with pytest.raises(pipeline.PipelineError, match=r"scene 'scene1', stage indirect: the API call failed"):
        pipeline.generate_candidates(scenes_path, frames, out2, "vcr", _client(openai_server, retries=0))
    openai_server.responder = scripted
    openai_server.clear()
    pipeline.generate_candidates(scenes_path, frames, out2, "vcr", _client(openai_server))
    assert len(openai_server.requests) == 15 - 7  # only what was not answered before


def test_bad_answers_are_retried_then_named(openai_server, scenes, tmp_path):
    scenes_path, frames = scenes

    def wrong_object(body):
        if "Write one direct request" in prompt_text(body):
            return '{"direct": "person1, fly the kite.", "solution": "(person1, fly, kite)", "caption": "An office."}'
        return scripted(body)

    openai_server.responder = wrong_object
    with pytest.raises(pipeline.PipelineError, match=r"scene 'scene0', stage direct: no valid answer in 2 attempt\(s\) "
                                                     r"\(the triplet's object 'kite' is not among"):
        pipeline.generate_candidates(scenes_path, frames, tmp_path / "out", "vcr", _client(openai_server))
    assert len(list((tmp_path / "out" / "_work" / "responses" / "scene0").glob("direct.rejected*.json"))) == 2


def test_bad_inputs(tmp_path, scenes):
    scenes_path, frames = scenes
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"image_name": "x", "ram_entity": [], "person_bbox": [[1, 2, 3, 4]]}]))
    with pytest.raises(pipeline.PipelineError, match=r"entry 0, field ram_entity"):
        pipeline.read_scenes(bad)
    with pytest.raises(pipeline.PipelineError, match="--subset 'coco'"):
        pipeline.generate_candidates(scenes_path, frames, tmp_path / "o", "coco", lambda p, i: {"text": ""})
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"data": {"image_name": "scene0"}, "annotations": [{"result": [
        {"from_name": "direct_rating", "type": "rating", "value": {"rating": 9}},
        {"from_name": "indirect_choice", "type": "choices", "value": {"choices": ["1"]}},
        {"from_name": "indirect_rating", "type": "rating", "value": {"rating": 3}}]}]}]))
    with pytest.raises(pipeline.PipelineError, match=r"task 0 \('scene0'\): ratings are 1-5"):
        pipeline.read_labels(export)
    done = run_cli([SPATIAL_TASKS, "generate", "vague", "--out", str(tmp_path / "o"), "--scenes",
                    str(scenes_path), "--images", str(frames), "--api-key-env", "NO_SUCH_KEY_VAR"],
                   capture_output=True, text=True)
    assert done.returncode == 2 and "NO_SUCH_KEY_VAR" in done.stderr


def test_a_damaged_stored_reply_is_named_and_asked_again(openai_server, scenes, tmp_path, caplog):
    openai_server.responder = scripted
    scenes_path, frames = scenes
    out = tmp_path / "out"
    pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    stored = out / "_work" / "responses" / "scene1" / "fake_scene.json"
    stored.write_text(stored.read_text()[:40])  # cut short by something outside the pipeline
    openai_server.clear()
    with caplog.at_level("WARNING"):
        pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    assert len(openai_server.requests) == 1  # only the damaged reply is asked again
    assert any(str(stored) in r.getMessage() and "a damaged stored reply" in r.getMessage() for r in caplog.records)
    assert json.loads(stored.read_text())["parsed"]["fake"]
    # issue 32, item 10: an edited answer that no longer fits is named with its field, and kept
    record = json.loads(stored.read_text())
    record["parsed"]["fake"] = "one string instead of the candidates"
    stored.write_text(json.dumps(record))
    edited = stored.read_bytes()
    with pytest.raises(pipeline.PipelineError, match=rf"{re.escape(str(stored))}: the stored fake_scene answer no "
                                                     r"longer fits \(fake: .*\); it was edited or damaged"):
        pipeline.generate_candidates(scenes_path, frames, out, "vcr", _client(openai_server))
    assert stored.read_bytes() == edited


@pytest.mark.parametrize(("export", "match"), [
    ("not a list", r"expected a JSON list of tasks"),
    (["a string task"], r"task 0: a task is a JSON object, got str"),
    ([{"data": {"image_name": "s"}, "annotations": "yes"}], r"task 0 \('s'\): 'annotations' must be a list of objects"),
    ([{"data": {"image_name": "s"}, "annotations": [{"result": ["rated 5"]}]}],
     r"task 0 \('s'\): an annotation result is not an object"),
    ([{"data": {"image_name": "s"}, "annotations": [{"result": [{"type": "rating", "value": "5"}]}]}],
     r"an annotation result is not an object with a 'value' object"),
    ([{"data": {"image_name": ["s"]}, "annotations": [{"result": []}]}], r"task 0: data.image_name must be text"),
    ([{"data": "scene0", "annotations": [{"result": []}]}], r"task 0: 'data' must be the task's object .*got str"),
    ([{"data": {"image_name": "s"}, "annotations": [{"result": [{"type": "rating", "value": {"rating": 4}}]}]}],
     r"needs direct_rating, indirect_choice and indirect_rating \(found \['None'\]\)"),
])
def test_a_label_studio_export_of_the_wrong_shape_is_named(tmp_path, export, match):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    with pytest.raises(pipeline.PipelineError, match=match):
        pipeline.read_labels(path)
