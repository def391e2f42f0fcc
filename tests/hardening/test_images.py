"""Image cells, checked for real (spatial_tasks.common.images): a table of damaged and hostile
cells -> the one-line error, with PIL's LOAD_TRUNCATED_IMAGES switched on as lmms-eval does."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageFile

from spatial_tasks.common import images
from spatial_tasks.common.images import ImageError
from spatial_tasks.common.origin import Origin

from . import bad_images as bad

WHERE = "data.parquet, row 3, column 'image'"


@pytest.fixture(autouse=True)
def lmms_eval_pil_settings(monkeypatch):
    """What importing lmms-eval does to PIL for the whole process."""
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)


BAD_BYTES = [
    ("truncated PNG", bad.truncated_png, r"damaged or truncated PNG image"),
    ("truncated JPEG", bad.truncated_jpeg, r"damaged or truncated JPEG image"),
    ("PNG with a bad chunk CRC", bad.bad_crc_png, r"damaged or truncated PNG image"),
    ("unreadable bytes", lambda: bad.GARBAGE, r"not a readable image \(unknown or damaged format\)"),
    ("empty bytes", lambda: b"", r"empty image \(no bytes\)"),
    ("decompression bomb", lambda: bad.png_with_header(100_000, 100_000),
     r"100000 x 100000 px is larger than the limit of \d+ pixels"),
    ("zero-width image", lambda: bad.png_with_header(0, 10), r"not a readable image|zero side"),
]


@pytest.mark.parametrize(("case", "make", "message"), BAD_BYTES, ids=[c[0] for c in BAD_BYTES])
def test_bad_bytes_are_refused_by_the_check_and_the_decoder(case, make, message):
    data = make()
    for function in (images.check_image, images.open_image):
        with pytest.raises(ImageError, match=rf"^{WHERE}: .*(?:{message})") as err:
            function(data, WHERE)
        assert "\n" not in str(err.value)
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True  # restored for the rest of the process


def test_the_same_truncated_png_is_silently_grey_without_the_strict_decoder():
    """Why the check exists: plain PIL under lmms-eval's setting raises nothing."""
    import io

    image = Image.open(io.BytesIO(bad.truncated_png()))
    image.load()  # no error
    assert image.size == (64, 64)


@pytest.mark.parametrize("make", [bad.png, bad.jpeg], ids=["png", "jpeg"])
def test_good_images_pass(make):
    assert images.check_image(make(), WHERE)[1] == (32, 24)
    assert images.open_image(make(), WHERE).size == (32, 24)


def _origin(root: Path) -> Origin:
    data = root / "cfg" / "test-00000-of-00001.parquet"
    return Origin(label="local", files=((str(data), 10),), root=root)


CELLS = [
    ("null cell", None, r"missing image \(null\)"),
    ("no bytes and no path", {"bytes": None, "path": None}, r"empty image cell"),
    ("a number", 42, r"not an image cell \(int\)"),
    ("path outside the folder", {"bytes": None, "path": "../../outside.png"}, r"image path '../../outside.png' points outside the dataset folder"),
    ("absolute path outside", {"bytes": None, "path": "/etc/hostname"},
     r"image path '/etc/hostname' points outside the dataset folder"),
    ("path to a missing file", {"bytes": None, "path": "missing.png"}, r"image file .*missing.png does not exist"),
]


@pytest.mark.parametrize(("case", "cell", "message"), CELLS, ids=[c[0] for c in CELLS])
def test_bad_cells(tmp_path, case, cell, message):
    (tmp_path / "cfg").mkdir()
    with pytest.raises(ImageError, match=rf"^{WHERE}: {message}"):
        images.cell_bytes(cell, WHERE, _origin(tmp_path), 3)


def test_a_path_only_cell_is_read_inside_the_dataset_folder(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "a.png").write_bytes(bad.png())
    assert images.cell_bytes({"bytes": None, "path": "a.png"}, WHERE, _origin(tmp_path), 3) == bad.png()


def test_a_path_only_cell_without_a_local_folder_is_refused():
    with pytest.raises(ImageError, match=r"holds only a path .* this dataset has none"):
        images.cell_bytes({"bytes": None, "path": "a.png"}, WHERE, Origin(label="hub/repo"), 3)


def test_bad_base64():
    with pytest.raises(ImageError, match=rf"^{WHERE}: not valid base64"):
        images.base64_bytes("not base64!!", WHERE)
    with pytest.raises(ImageError, match=rf"^{WHERE}: empty or non-text base64 image"):
        images.base64_bytes(None, WHERE)
