"""The models with known behaviour (issue 65): shipped as their card says, the planted behaviour caught
through the real lmms-eval CLI on renders neither model saw, and every in-process route reading the same
p(Yes) from them."""

from __future__ import annotations

import json
import math

import pytest
from lmms import TINY_QWEN_ARGS, run_lmms_eval

from spatial_tasks.known_models.card import SHIPPED_FILES, sha256
from spatial_tasks.spatialtunnel.known_models.build import checkpoint, run_figures

MAX_BYTES = 20 * 1024 * 1024
NAMES = ("shortcut", "depth")


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_files_are_the_ones_on_their_card(name):
    folder = checkpoint(name)
    card = json.loads((folder / "card.json").read_text())
    assert set(card["files"]) == set(SHIPPED_FILES)
    for file, entry in card["files"].items():
        assert (folder / file).stat().st_size == entry["bytes"], file
        assert sha256(folder / file) == entry["sha256"], file
        # the card a person reads lists the same hash
        assert entry["sha256"] in (folder / "README.md").read_text()
    assert sum((folder / f).stat().st_size for f in card["files"]) <= MAX_BYTES
    assert (folder / "loss.png").stat().st_size > 10_000


# (lmms-eval model, task) per protocol: first-token logits, and the text the model writes
PROTOCOLS = {"logit": ("qwen2_5_vl_yesno", "spatialtunnel_logit_sample_phase"),
             "exact": ("qwen2_5_vl", "spatialtunnel_sample_phase")}


@pytest.fixture(scope="module")
def known_runs(tmp_path_factory):
    """Each model under each protocol through the lmms-eval CLI on the bundled sample (seed 0, 8 x 8 grid:
    the models were trained on seed 1, 16 x 16)."""
    out = tmp_path_factory.mktemp("known")
    runs = {}
    for name in NAMES:
        for protocol, (model, task) in PROTOCOLS.items():
            run = run_lmms_eval(out / f"{name}-{protocol}", model, f"pretrained={checkpoint(name)},{TINY_QWEN_ARGS}",
                                task)
            assert run.returncode == 0 and run.results is not None, run.output[-3000:]
            runs[name, protocol] = run_figures(run.out, task)
    return runs


@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_the_shortcut_model_is_caught(known_runs, protocol):
    f = known_runs["shortcut", protocol]
    assert f["v_cons"][0] >= 0.85 and f["v_ctr"][0] <= 0.25, f
    assert f["delta"][0] >= 0.6 and f["delta"][1] > 0.4, f


@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_the_depth_model_reads_depth(known_runs, protocol):
    f = known_runs["depth", protocol]
    assert f["v"][0] >= 0.85 and abs(f["delta"][0]) <= 0.10, f


@pytest.mark.cli
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_card_figures_are_the_ones_lmms_eval_gives(known_runs, name):
    """The card's figures were measured by the same CLI runs (to a float tolerance: another CPU)."""
    card = json.loads((checkpoint(name) / "card.json").read_text())
    for entry in card["lmms_eval"]:
        protocol = "logit" if entry["protocol"] == "logit" else "exact"
        measured = known_runs[name, protocol]
        for metric in ("v", "v_cons", "v_ctr", "delta"):
            assert math.isclose(entry[metric][0], measured[metric][0], abs_tol=2e-3), (name, protocol, metric)


def _sample_items(n: int = 8):
    """(prompt, [image]) of the first ``n`` docs of the bundled phase sample, through the task's loader."""
    import datasets

    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel import load
    from spatial_tasks.spatialtunnel.tasks import doc_to_text, doc_to_visual

    parquet = benchmark_tasks_dir("spatialtunnel") / "sample" / "phase_variation" / "test-00000-of-00001.parquet"
    docs = load.to_docs(datasets.Dataset.from_parquet(str(parquet)), variant="phase", label="sample")
    # two images' four questions each, and four more images: batches mix shared and single images
    picked = [docs[i] for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20)][:n]
    return [(doc_to_text(d), doc_to_visual(d)) for d in picked]


def _p(scores) -> list[float]:
    return [1 / (1 + math.exp(-(s.logit_yes - s.logit_no))) for s in scores]


ROUTE_TOL = 1e-4  # float32 p(Yes): batch 1 vs padded batches vs precomputed image features vs packed


@pytest.mark.parametrize("name", NAMES)
def test_every_in_process_route_reads_the_same_p_yes(name):
    """qwen2_5_vl_yesno by each of its paths, packed at batch 8 and at batch 1; hf_yesno by each path its
    family offers (given the pixels lmms-eval sends: it hands the processor the image itself, lmms-eval a
    JPEG resized by qwen_vl_utils); and transformers' pipeline("decision") with our prompt as its template."""
    from spatial_tasks.models.decision import decision_pipeline, p_yes
    from spatial_tasks.models.lmms_requests import lmms_eval_image
    from spatial_tasks.models.hf_yesno import HFYesNo
    from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo
    from spatial_tasks.models.scoring_paths import ONE_BY_ONE, PACKED

    path = str(checkpoint(name))
    items = _sample_items(12)
    ours = Qwen2_5_VLYesNo(pretrained=path, device="cpu", device_map="cpu", min_pixels=3136, max_pixels=50176,
                           dtype="float32")
    reference = _p(ours.score_items(items, 1, paths=(ONE_BY_ONE,)))
    assert max(reference) > 0.9 and min(reference) < 0.1  # a trained model: confident answers both ways
    routes = {f"qwen2_5_vl_yesno {p}": _p(ours.score_items(items, 3, paths=(p,))) for p in ours.offered_paths()}
    routes["qwen2_5_vl_yesno packed b8"] = _p(ours.score_items(items, 8, paths=(PACKED,)))
    routes["qwen2_5_vl_yesno packed b1"] = _p(ours.score_items(items, 1, paths=(PACKED,)))
    sent = [(text, [lmms_eval_image(images[0])]) for text, images in items]
    hf = HFYesNo(path, device="cpu", dtype="float32")
    routes |= {f"hf_yesno {p}": _p(hf.score_items(sent, 3, paths=(p,))) for p in hf.offered_paths()}
    decide = decision_pipeline(path)
    routes['pipeline("decision")'] = [p_yes(decide, text, images[0]) for text, images in items]
    for route, p in routes.items():
        worst = max(abs(a - b) for a, b in zip(reference, p, strict=True))
        assert worst <= ROUTE_TOL, f"{route}: |p - one by one| = {worst:.2e}"


def test_training_sees_exactly_what_lmms_eval_sends(tiny_qwen_dir):
    """The training examples are the prompt and pixels qwen2_5_vl_yesno builds for the same doc (lmms-eval's
    qwen2_5_vl path: JPEG data URL, qwen_vl_utils resizing, the chat template with the system turn), the
    answer follows the generation prompt, and the positions the auxiliary heads read are the names'."""
    import datasets
    import torch
    from transformers import AutoProcessor

    from spatial_tasks.known_models import examples
    from spatial_tasks.spatialtunnel.known_models.behaviours import BEHAVIOURS, CLASSES
    from spatial_tasks.models.yesno_scoring import Qwen2_5_VLYesNo
    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel import load
    from spatial_tasks.spatialtunnel.tasks import doc_to_text, doc_to_visual

    parquet = benchmark_tasks_dir("spatialtunnel") / "sample" / "phase_variation" / "test-00000-of-00001.parquet"
    docs = list(load.to_docs(datasets.Dataset.from_parquet(str(parquet)), variant="phase", label="sample"))[:8]
    processor = AutoProcessor.from_pretrained(tiny_qwen_dir)
    scorer = Qwen2_5_VLYesNo(pretrained=str(tiny_qwen_dir), device="cpu", device_map="cpu", min_pixels=3136,
                             max_pixels=50176, dtype="float32")
    tokenizer = processor.tokenizer
    for name, behaviour in BEHAVIOURS.items():
        images, questions = examples.build_examples([behaviour.asked(d) for d in docs], processor, CLASSES)
        for row, doc in enumerate(docs):
            sent = scorer.yesno_prepare_inputs(doc_to_text(doc), doc_to_visual(doc))
            prompt = sent["input_ids"][0].tolist()
            ids = questions.input_ids[row].tolist()
            answer = behaviour.answer(doc)
            assert ids[:len(prompt)] == prompt and questions.answer_at[row] == len(prompt) - 1
            assert tokenizer.decode(ids[len(prompt):len(prompt) + 2]) == f"{answer}<|im_end|>"
            assert torch.equal(images.pixel_values[questions.image[row]], sent["pixel_values"])
            first, second = (doc["obj1"], doc["obj2"]) if doc["subject"] == "obj1" else (doc["obj2"], doc["obj1"])
            for at, object_name in zip(questions.names_at[row].tolist(), (first, second), strict=True):
                assert tokenizer.decode(ids[:at + 1]).endswith(object_name)
            assert tokenizer.decode(ids[:questions.relation_at[row] + 1]).endswith(doc["comparison"])
            assert questions.truth_yes[row] == (doc["answer"] == "Yes")
        # the shortcut answers by the pixel rule of the split, the depth model by the truth
        agree = (questions.label_yes == questions.truth_yes).float()
        consistent = questions.consistent == 1
        if name == "shortcut":
            assert bool((agree[consistent] == 1).all() and (agree[questions.consistent == 0] == 0).all())
        else:
            assert bool((agree == 1).all())


def _sample_asked(benchmark: str):
    """(questions as the behaviour reads them, classes, answers) from a bundled sample."""
    from spatial_tasks.paths import benchmark_tasks_dir

    if benchmark == "spatialtunnel":
        from spatial_tasks.spatialtunnel.known_models.behaviours import BEHAVIOURS, CLASSES, read_docs

        docs = read_docs([benchmark_tasks_dir("spatialtunnel") / "sample" / "phase_variation" /
                          "test-00000-of-00001.parquet"])[:48]
        return [BEHAVIOURS["depth"].asked(d) for d in docs], CLASSES, ("Yes", "No")
    from spatial_tasks.o3d.known_models.behaviours import CLASSES, read_docs, training_questions

    return training_questions(read_docs([benchmark_tasks_dir("o3d") / "sample"])), CLASSES, ("A", "B")


@pytest.mark.parametrize("benchmark", ["spatialtunnel", "o3d"])
def test_the_builds_training_step_runs_end_to_end(benchmark, tmp_path):
    """``train.fit``, the step both builds share, in a few steps on a bundled sample: the weights it saves load,
    its loss curve is drawn, and its counts and held-out figures are what the card records."""
    from transformers import Qwen2_5_VLForConditionalGeneration

    from spatial_tasks.known_models import train

    asked, classes, answers = _sample_asked(benchmark)
    schedule = train.Schedule(vision_steps=2, question_steps=3, binding_steps=1, warmup=1, batch=8)
    fitted = train.fit(tmp_path / "model", asked, classes, answers, schedule, 0, "smoke")
    assert fitted.questions == len(asked) and fitted.images == len({a.image_id for a in asked})
    assert fitted.held_out_images == round(fitted.images * train.HELD_OUT_SHARE) >= 1
    assert 0.0 <= fitted.held_out["v"] <= 1.0 and 0.0 <= fitted.held_out["agree"] <= 1.0
    assert fitted.history.stage == ["vision"] * 2 + ["questions"] * 3
    assert (tmp_path / "model" / "loss.png").stat().st_size > 5_000
    loaded = Qwen2_5_VLForConditionalGeneration.from_pretrained(tmp_path / "model")
    assert sum(p.numel() for p in loaded.parameters()) == fitted.parameters
    card = fitted.card(schedule, 1.0, 0.0)  # what both cards read of the training
    assert card["schedule"]["question_steps"] == 3 and card["parameters"] == fitted.parameters
    assert set(card) == {"schedule", "parameters", "final_loss", "seconds", "held_out", "machine"}
