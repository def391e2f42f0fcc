"""The report page (``report/index.html``) without a browser: what it embeds, its thumbnails, and
the folder it writes (tests/test_report_page_browser.py opens it in Chromium)."""

from __future__ import annotations

import json
import shutil

import pytest
from PIL import Image

from spatial_tasks.common.owned import NotOurs
from spatial_tasks.page import embed
from spatial_tasks.page.images import THUMB_PX, thumbnail_bytes
from spatial_tasks.registry import read_runs
from spatial_tasks.report import write_report

# ------------------------------------------------------------------------------------------
# Without a browser


def test_embedded_data_cannot_close_its_script_element():
    text = embed({"prompt": "</script><script>alert(1)</script>", "amp": "a & b", "more": "x > y"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"prompt": "</script><script>alert(1)</script>", "amp": "a & b", "more": "x > y"}


def test_undefined_figures_are_embedded_as_null():
    assert json.loads(embed({"ours": float("nan"), "rows": [{"p": float("inf")}, 0.5]})) == {"ours": None, "rows": [{"p": None}, 0.5]}


def test_thumbnails_fit_the_limit_and_keep_the_picture():
    wide = Image.new("RGBA", (1000, 250), (255, 0, 0, 255))
    import io

    thumb = Image.open(io.BytesIO(thumbnail_bytes(wide)))
    assert thumb.format == "JPEG" and max(thumb.size) == THUMB_PX and thumb.size == (160, 40)
    r, g, b = thumb.getpixel((80, 20))
    assert r > 200 and g < 60 and b < 60


# ------------------------------------------------------------------------------------------
# The folder a report writes


def test_the_report_writes_one_page_and_one_folder_of_small_thumbnails(page_report):
    assert (page_report / "index.html").is_file()
    assert sorted(p.name for p in page_report.iterdir() if p.is_dir()) == ["thumbs"]
    thumbs = list((page_report / "thumbs").iterdir())
    assert thumbs and all(max(Image.open(t).size) <= THUMB_PX for t in thumbs)
    assert "index.html" in (page_report / "report.md").read_text()


def test_a_file_of_the_users_among_the_thumbnails_stops_the_report(page_runs, page_report, tmp_path):
    out = tmp_path / "report"
    shutil.copytree(page_report, out)
    write_report(read_runs(page_runs / "dori"), out)  # our own earlier report (its thumbnails too) is replaced
    assert {p.name for p in (out / "thumbs").iterdir()} and not (out / "thumbs" / "notes.txt").exists()
    (out / "thumbs" / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(NotOurs, match="notes.txt"):
        write_report(read_runs(page_runs / "dori"), out)
    assert sorted(p.relative_to(out) for p in out.rglob("*") if ".report-" not in str(p)) == before
    assert (out / "thumbs" / "notes.txt").read_text() == "mine"
