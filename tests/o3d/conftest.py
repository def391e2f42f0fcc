"""O3-D test fixtures (names prefixed ``o3d_``): a small offline dataset in the Hub layout."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from spatial_tasks.generators.o3d import standins as fixture

from spatial_tasks.o3d import load


@pytest.fixture(scope="session")
def o3d_fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``fixture.build_fixture`` output (seed 0, DEFAULT_COUNTS, 128x96), built once. Read-only."""
    return fixture.build_fixture(tmp_path_factory.mktemp("o3d_fixture") / "O3-D", seed=0)


@pytest.fixture(scope="session")
def o3d_load_kwargs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``load_dataset`` kwargs that keep the datasets cache out of the home directory."""
    return {"cache_dir": str(tmp_path_factory.mktemp("o3d_hf_cache"))}


@pytest.fixture(scope="session")
def o3d_docs(o3d_fixture_dir: Path, o3d_load_kwargs: dict) -> datasets.Dataset:
    """Canonical docs for every question of the fixture (``load.load_o3d``)."""
    return load.load_o3d(str(o3d_fixture_dir), load_kwargs=o3d_load_kwargs)
