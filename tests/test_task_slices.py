"""Task slices are data: every task of a benchmark names the benchmark's one process_docs, and its
slice (DORI task x granularity, O3-D subsets / marking / clarity / demonstrations, the SpatialTunnel
variant, the re-split's source, the VAGUE subset) is in its YAML metadata -- a bad value is a clear
error naming the task and the key."""

from __future__ import annotations

from collections import defaultdict

import pytest

from spatial_tasks.catalog import task_catalog
from spatial_tasks.common.validate import DataError
from spatial_tasks.harness import DocsHook, TaskData


def test_each_benchmark_has_one_process_docs_and_every_task_declares_its_slice():
    from lmms_eval.utils import load_yaml_config

    hooks: dict[str, set[str]] = defaultdict(set)
    slices: dict[str, dict] = {}
    for entry in task_catalog():
        if entry.kind != "task":
            continue
        cfg = load_yaml_config(str(entry.path), mode="full")
        assert isinstance(cfg["process_docs"], DocsHook), entry.name
        hooks[entry.benchmark].add(cfg["process_docs"].__name__)
        slices[entry.name] = {k: v for k, v in (cfg.get("metadata") or {}).items() if k != "version"}
    assert {b: sorted(h) for b, h in hooks.items()} == {
        "spatialtunnel": ["spatialtunnel.process_docs", "spatialtunnel_resplit.process_docs"],
        "o3d": ["o3d.process_docs"], "dori": ["dori.process_docs"], "vague": ["vague.process_docs"]}
    assert slices["dori_compound_rotation_granular"] == {"task": "compound_rotation", "granularity": "granular"}
    assert slices["dori_sample"] == {}  # every question
    assert slices["o3d_clarity_med"] == {"subsets": "synthetic", "marked": False, "clarity": "med",
                                         "demonstrations": False}
    assert slices["o3d_icl_cot"]["demonstrations"] is True and slices["o3d_real"]["subsets"] == "real"
    assert slices["spatialtunnel_logit_size"] == {"grid": 16, "variant": "size"}
    assert slices["spatialtunnel_cv_bench_3d_split"] == {"answer_reader": "lmms_eval", "source": "cv_bench_3d"}
    assert slices["vague_ego4d_sm_cot"] == {"subset": "ego4d"} and slices["vague_sample_vlm"] == {}


def _data(name: str, **metadata) -> TaskData:
    return TaskData(task=name, path="parquet", metadata=metadata)


def test_a_bad_slice_is_an_error_naming_the_task_and_key():
    from spatial_tasks.dori.tasks import task_slice
    from spatial_tasks.o3d.schema import SchemaError
    from spatial_tasks.o3d.slices import Slice
    from spatial_tasks.spatialtunnel.resplit.tasks import task_docs as resplit_docs
    from spatial_tasks.vague.tasks import task_subset

    with pytest.raises(DataError, match=r"dori_x: metadata.task 'compound' is not a DORI task"):
        task_slice(_data("dori_x", task="compound", granularity="coarse"))
    with pytest.raises(DataError, match=r"dori_x: metadata.granularity 'fine' is not one of"):
        task_slice(_data("dori_x", task="compound_rotation", granularity="fine"))
    assert task_slice(_data("dori_x")) == (None, None)
    with pytest.raises(DataError, match=r"vague_x: metadata.subset 'VCR' is not one of \['vcr', 'ego4d'\]"):
        task_subset(_data("vague_x", subset="VCR"))
    with pytest.raises(SchemaError, match=r"o3d_x: metadata.subsets is 'kb': one of synthetic, real, icl"):
        Slice.of({"subsets": "kb", "marked": True}, "o3d_x")
    with pytest.raises(SchemaError, match=r"o3d_x: metadata.marked is None: true or false"):
        Slice.of({"subsets": "real"}, "o3d_x")
    with pytest.raises(SchemaError, match=r"o3d_x: metadata.clarity is 'top'"):
        Slice.of({"subsets": "synthetic", "marked": False, "clarity": "top"}, "o3d_x")
    assert Slice.of({"subsets": ["kb-1cue"], "marked": False, "clarity": "med"}, "o3d_x") == Slice(
        ("kb-1cue",), False, 3.0, False)
    with pytest.raises(DataError, match=r"st_x: metadata.source None is not one of"):
        resplit_docs(None, _data("st_x"))
