"""One provenance record for every generator (generators/common/provenance.py): the command that
remakes the rows, the image-defining flags, seed, renderer and Blender versions, commit and package
versions -- in every parquet file and on every card. The Blender generators' records are checked
in their render tests; here the record itself and DORI's PIL path (no Blender)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from PIL import Image
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common import provenance
from spatial_tasks.generators.dori import generate as dori_gen


def test_the_command_names_every_flag_that_defines_the_rows():
    flags = {"cues": "none,HP", "objects": ["cube", "torus"], "strengths": [1.0, 2.0], "no_lp": True,
             "assets": None, "seed": 3, "shard": "1/2", "workers": 8, "device": "cuda", "patterns": 0}
    line = provenance.command_line("o3d", flags, Path("/data/some folder/o3d-out"))
    assert shlex.split(line) == ["spatial-tasks", "generate", "o3d", "--out", "o3d-out", "--cues", "none,HP",
                                 "--objects", "cube,torus", "--strengths", "1,2", "--no-lp", "--seed", "3",
                                 "--shard", "1/2", "--patterns", "0"]  # speed flags and None left out
    assert provenance.image_flags(flags).keys() == flags.keys() - {"workers", "device"}


def test_a_record_needs_the_seed():
    with pytest.raises(ValueError, match="seed"):
        provenance.record("dori", {"task": "x"}, Path("out"), renderer_version=None, blender=False)


def test_is_done_compares_what_it_is_told_and_nothing_else(tmp_path):
    record, image = tmp_path / "a.json", tmp_path / "a.png"
    record.write_text(json.dumps({"render": {"resolution": 64, "samples": 2, "blender": "5.2"}, "row": {"k": [1, 2]}}))
    assert not provenance.is_done(record, {"render": {"resolution": 64}}, [image])  # the image is missing
    image.write_bytes(b"png")
    assert provenance.is_done(record, {"render": {"resolution": 64, "samples": 2}, "row": {"k": (1, 2)}}, [image])
    assert not provenance.is_done(record, {"render": {"resolution": 128}}, [image])
    assert not provenance.is_done(record, {"render": {"renderer_version": 1}}, [image])  # absent key
    record.write_text("{half")
    assert not provenance.is_done(record, {}, [image])


def test_dori_transforms_carry_the_same_record_as_the_renders(tmp_path):
    images = tmp_path / "photos"
    images.mkdir()
    for k, colour in enumerate(((200, 40, 40), (40, 200, 40))):
        picture = Image.new("RGB", (48, 32), colour)
        picture.paste((255, 255, 255), (0, 0, 10 + 5 * k, 8))  # not symmetric: it has a canonical pose
        picture.save(images / f"p{k}.png")
    out = tmp_path / "dori"
    dori_gen.generate("canonical_orientation", out, images=images, seed=2, patterns=1, progress=False)
    (file,) = ds.parquet_files(out / "canonical_orientation", dori_gen.SPLIT)
    record = ds.read_generation(file)
    assert set(provenance.KEYS) <= set(record)
    assert record["generator"] == "spatial_tasks.generators.dori" and record["seed"] == 2
    assert record["flags"] == {"task": "canonical_orientation", "seed": 2, "shard": "1/1", "images": "photos",
                               "source": "transformed images", "patterns": 1}
    assert record["blender_version"] is None and record["renderer_version"] is None  # PIL, no Blender
    assert shlex.split(record["command"])[:5] == ["spatial-tasks", "generate", "dori", "--out", "dori"]
    assert record["versions"]["datasets"] and record["versions"]["spatial-tasks"]
    card = (out / "README.md").read_text()
    assert record["command"] in card and "none (no Blender)" in card and f"datasets {record['versions']['datasets']}" in card
