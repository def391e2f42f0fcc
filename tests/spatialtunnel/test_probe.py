"""spatial-tasks probe on the tiny Qwen2.5-VL: the real hidden-state path end to end (its numbers
are noise), deltas equal to h(swapped) − h(original), resume after an interruption, recompute
without the model, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.models import families
from spatial_tasks.models.hidden_states import FamilyHidden, load_hidden_state_model
from spatial_tasks.registry import read_runs
from spatial_tasks.spatialtunnel.probe import metrics as probing
from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs
from spatial_tasks.spatialtunnel.probe.run import ProbeError, recompute, run_probe

from .fakes import prompt_rows, write_prompt_parquet


@pytest.fixture(scope="module")
def tiny_model(tiny_qwen_dir):
    return load_hidden_state_model(str(tiny_qwen_dir), device="cpu", dtype="float32")


@pytest.fixture
def pairs(tmp_path):
    return load_probe_pairs(write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows(3)))


class CountingModel:
    """The real model, counting prompts; raises KeyboardInterrupt on call ``interrupt_at``."""

    def __init__(self, model, interrupt_at: int | None = None):
        self.model, self.interrupt_at, self.calls, self.prompts = model, interrupt_at, 0, 0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def last_token_states(self, items, layers=None):
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        self.prompts += len(items)
        return self.model.last_token_states(items, layers)


def test_family_hook_finds_qwen_and_refuses_unknown(tiny_model, tiny_qwen_dir, tmp_path):
    assert isinstance(tiny_model, FamilyHidden) and tiny_model.family.probe_prompt is families.qwen_vl_utils_inputs
    assert (tiny_model.num_layers, tiny_model.hidden_size) == (2, 64)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llava"}))
    with pytest.raises(ValueError, match="no hidden-state probe for model family 'llava'; supported: qwen2_5_vl, qwen3_vl, "):
        load_hidden_state_model(str(tmp_path))


def test_deltas_are_swapped_minus_original_at_every_layer(tiny_model, pairs, tmp_path):
    summary = run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="tiny", batch_size=4)
    assert (summary.done, summary.total) == (18, 18)
    deltas = np.load(tmp_path / "out" / "deltas.npy")
    assert deltas.shape == (2, 18, 64) and deltas.dtype == np.float32
    for row in (0, 7, 17):  # one by one, unpadded: same as the padded batches
        pair = pairs.pairs[row]
        image = pair_image(pair)
        original, _ = tiny_model.last_token_states([(pair.question(), image)])
        swapped, _ = tiny_model.last_token_states([(pair.swapped_question(), image)])
        np.testing.assert_allclose(deltas[:, row], swapped[:, 0] - original[:, 0], atol=1e-5)
    assert np.abs(deltas).max() > 0  # the swap changes the state
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    labels = [pairs.pairs[row].label for row in range(18)]
    per_layer = {k: probing.metrics_of(deltas[k], labels) for k in (0, 1)}
    assert (metrics["layer"], metrics["layer_reason"]) == probing.choose_layer(per_layer, 2, "tiny")
    assert set(metrics["per_layer"]) == {"0", "1"} and metrics["counts"] == {label: 3 for label in probing.AXIS_OF}
    assert metrics["paper_table5"] is None
    named = recompute(tmp_path / "out", layer=1)  # --layer: the user's choice of layer
    assert (named.layer, named.why) == (1, "named with --layer")
    assert named.metrics["at_layer"] == pytest.approx(per_layer[1])
    for name in ("coherence.png", "pca_layer1.png", "metrics.csv"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    records = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert [r["row"] for r in records] == list(range(18))
    assert records[0]["swapped"] == pairs.pairs[0].swapped_question()


def test_verify_reads_table5_from_a_probe_folder(tiny_model, pairs, tmp_path):
    """A probe folder whose model is one of the paper's: its metrics at the reported layer beside Table 5."""
    from spatial_tasks.results.verify import verify

    run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="Qwen/Qwen2.5-VL-3B-Instruct", batch_size=4)
    recompute(tmp_path / "out", layer=1)  # a 2-layer model has no paper layer: name one
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    cells = {c["column"]: c for c in verify(read_runs(tmp_path))["cells"]}
    assert set(cells) == {"coh_h", "coh_v", "coh_d", "vd_ei"}
    assert cells["vd_ei"]["ours"] == pytest.approx(metrics["at_layer"]["VD-EI"]) and cells["vd_ei"]["paper"] == 0.457
    assert cells["coh_h"]["scope"] == f"probe, layer {metrics['layer']}" and cells["coh_h"]["table"] == "table5"


def pair_image(pair):
    from spatial_tasks.common.images import open_image

    return open_image(pair.image, pair.where).convert("RGB")


def test_interrupted_probe_resumes_with_the_same_deltas(tiny_model, pairs, tmp_path):
    run_probe(lambda: tiny_model, pairs, tmp_path / "full", model_name="tiny", batch_size=4)
    flaky = CountingModel(tiny_model, interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        run_probe(lambda: flaky, pairs, tmp_path / "cut", model_name="tiny", batch_size=4)
    assert len((tmp_path / "cut" / "pairs.jsonl").read_text().splitlines()) == 8  # two batches kept
    with open(tmp_path / "cut" / "pairs.jsonl", "a") as log:
        log.write('{"row": 8, "id": "8", "lab')  # a line cut off by the crash: redone, not trusted
    again = CountingModel(tiny_model)
    summary = run_probe(lambda: again, pairs, tmp_path / "cut", model_name="tiny", batch_size=4)
    assert again.prompts == 2 * 10 and summary.done == 18  # only the 10 missing pairs, two prompts each
    np.testing.assert_allclose(np.load(tmp_path / "cut" / "deltas.npy"), np.load(tmp_path / "full" / "deltas.npy"),
                               atol=1e-5)
    done = CountingModel(tiny_model)
    run_probe(lambda: done, pairs, tmp_path / "cut", model_name="tiny")
    assert done.calls == 0  # nothing left: the model is not even needed


def test_other_model_or_data_in_the_folder_is_refused_unless_overwrite(tiny_model, pairs, tmp_path):
    run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="tiny", batch_size=8)
    with pytest.raises(ProbeError, match="holds a probe with another model \\(it probed 'tiny' on 18 pairs"):
        run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="other")
    fewer = load_probe_pairs(pairs.source, per_category=1)
    with pytest.raises(ProbeError, match="another number of pairs and other pairs \\(ids, answers"):
        run_probe(lambda: tiny_model, fewer, tmp_path / "out", model_name="tiny")
    summary = run_probe(lambda: tiny_model, fewer, tmp_path / "out", model_name="tiny", overwrite=True)
    assert summary.total == 6 and np.load(tmp_path / "out" / "deltas.npy").shape == (2, 6, 64)


def test_recompute_needs_no_model_and_gives_the_same_metrics(tiny_model, pairs, tmp_path):
    first = run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="tiny", batch_size=5)
    (tmp_path / "out" / "metrics.json").unlink()
    second = recompute(tmp_path / "out")
    assert second.metrics == first.metrics
    with pytest.raises(ProbeError, match="no probe.json here"):
        recompute(tmp_path)


def test_cli_probe_and_recompute(tiny_qwen_dir, tmp_path):
    data = write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows(2))
    run = run_cli([SPATIAL_TASKS, "probe", "--model", str(tiny_qwen_dir), "--data", str(data), "--out",
                   str(tmp_path / "out"), "--batch-size", "3", "--dtype", "float32"],
                  capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "12 pairs from" in run.stdout and "12/12 pairs probed; " in run.stdout
    chosen = json.loads((tmp_path / "out" / "metrics.json").read_text())
    if chosen["layer"] is None:  # the random model's coherences may leave no layer qualifying: said, not hidden
        assert "no layer qualifies" in run.stdout and "--layer" in run.stdout
    else:
        assert f"12/12 pairs probed; layer {chosen['layer']}" in run.stdout
    assert "probing pairs" in run.stderr  # the progress bar
    again = run_cli([SPATIAL_TASKS, "probe", "--out", str(tmp_path / "out"), "--layer", "0"], capture_output=True,
                    text=True, timeout=120)
    assert again.returncode == 0 and "12/12 pairs probed; layer 0 (named with --layer): Coh_H" in again.stdout
    wrong = run_cli([SPATIAL_TASKS, "probe", "--out", str(tmp_path / "out"), "--layer", "5"], capture_output=True,
                    text=True, timeout=120)
    assert wrong.returncode == 2 and "--layer 5:" in wrong.stderr and "holds layers 0-1" in wrong.stderr
    lone = run_cli([SPATIAL_TASKS, "probe", "--out", str(tmp_path / "x"), "--model", str(tiny_qwen_dir)],
                   capture_output=True, text=True, timeout=120)
    assert lone.returncode == 2 and lone.stderr.strip() == "error: --model and --data go together (neither: recompute from --out)"


def test_layers_keep_only_those_layers(tiny_model, pairs, tmp_path):
    run_probe(lambda: tiny_model, pairs, tmp_path / "all", model_name="tiny", batch_size=6)
    summary = run_probe(lambda: tiny_model, pairs, tmp_path / "one", model_name="tiny", batch_size=6, layers=[1])
    kept = np.load(tmp_path / "one" / "deltas.npy")
    assert kept.shape == (1, 18, 64)
    np.testing.assert_allclose(kept[0], np.load(tmp_path / "all" / "deltas.npy")[1], atol=1e-5)
    assert set(summary.metrics["per_layer"]) == {"1"}
    per_layer = {1: summary.metrics["per_layer"]["1"]}
    assert (summary.layer, summary.why) == probing.choose_layer(per_layer, 2, "tiny")
    with pytest.raises(ProbeError, match=r"another set of layers \(it holds \[1\]\)"):
        run_probe(lambda: tiny_model, pairs, tmp_path / "one", model_name="tiny", layers=[0, 1])
    with pytest.raises(ValueError, match=r"--layers \[2\]: tiny has decoder layers 0..1"):
        run_probe(lambda: tiny_model, pairs, tmp_path / "bad", model_name="tiny", layers=[0, 2])


def test_parse_layers():
    from spatial_tasks.spatialtunnel.probe.run import parse_layers

    assert parse_layers(None) is None and parse_layers(" ") is None
    assert parse_layers("20-22, 30,21") == [20, 21, 22, 30]
    for bad in ("x", "5-3", "-1", "1-"):
        with pytest.raises(ValueError, match="--layers"):
            parse_layers(bad)


def test_missing_model_folder_is_named(tmp_path):
    from spatial_tasks.models.families import ModelFamilyError
    from spatial_tasks.models.families import read_model_type

    with pytest.raises(ModelFamilyError, match=f"{tmp_path}/nothing: no such folder"):
        read_model_type(str(tmp_path / "nothing"))


def test_a_truncated_deltas_file_is_named(tiny_model, pairs, tmp_path):
    run_probe(lambda: tiny_model, pairs, tmp_path / "out", model_name="tiny", batch_size=5)
    deltas = tmp_path / "out" / "deltas.npy"
    deltas.write_bytes(deltas.read_bytes()[: deltas.stat().st_size // 2])
    with pytest.raises(ProbeError, match=r"deltas\.npy: cannot read it .*damaged or truncated: rerun the probe with "
                                         r"--overwrite"):
        recompute(tmp_path / "out")


def test_a_missing_gpu_is_one_line_before_the_model_loads(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    data = write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows(2))
    run = run_cli([SPATIAL_TASKS, "probe",
                   "--model", str(tmp_path / "no_model"), "--data", str(data), "--device", "cuda",
                   "--out", str(tmp_path / "p")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        "error: --device cuda: torch sees no CUDA GPU on this machine "
        f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); use --device cpu"]
