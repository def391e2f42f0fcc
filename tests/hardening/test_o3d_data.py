"""O3-D data where it enters (spatial_tasks.o3d.load.build_docs): a table of bad datasets -> the
one-line error naming file, row and field. Each case edits a copy of the offline fixture in the
official Hub layout (one parquet per config) and loads it as the tasks do, with PIL's
LOAD_TRUNCATED_IMAGES switched on as lmms-eval does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import ImageFile
from spatial_tasks.generators.o3d import standins as fixture

from spatial_tasks.common.origin import Origin
from spatial_tasks.common.validate import DataError
from spatial_tasks.harness import TaskData
from spatial_tasks.o3d import load, schema

from . import bad_images as bad

PARQUET = fixture.PARQUET_NAME


@pytest.fixture(autouse=True)
def lmms_eval_pil_settings(monkeypatch):
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return fixture.build_fixture(tmp_path_factory.mktemp("o3d") / "O3-D", seed=0)


def _file(root: Path, config: str) -> Path:
    return root / config / PARQUET


def set_cell(config: str, column: str, row: int, value):
    """Edit one cell in place (pyarrow; the schema and its datasets features stay as they are)."""
    def edit(root: Path) -> None:
        table = pq.read_table(_file(root, config))
        values = table.column(column).to_pylist()
        values[row if row >= 0 else len(values) + row] = value(values) if callable(value) else value
        index = table.schema.get_field_index(column)
        field = table.schema.field(index)
        pq.write_table(table.set_column(index, field, pa.array(values, field.type)), _file(root, config))
    return edit


def set_image(config: str, column: str, row: int, data: bytes | None, path: str | None = None):
    return set_cell(config, column, row, {"bytes": data, "path": path})


def first_row(config: str, column: str, value):
    """The row of ``config`` whose ``column`` is ``value`` (evaluated on the pristine fixture)."""
    return lambda root: pq.read_table(_file(root, config)).column(column).to_pylist().index(value)


def with_datasets(config: str, transform):
    """Rewrite one config through ``datasets`` (to change a column's type or drop it)."""
    def edit(root: Path) -> None:
        ds = datasets.Dataset.from_parquet(str(_file(root, config)), cache_dir=str(root.parent / "hf-edit"))
        transform(ds).to_parquet(str(_file(root, config)))
    return edit


def load_checked(root: Path, tmp_path: Path) -> datasets.Dataset:
    load.clear_registry()
    return load.load_o3d(str(root), load_kwargs={"cache_dir": str(tmp_path / "hf-cache")})


VQ = rf"visual_questions/{PARQUET}"
KB1 = rf"kb-1cue/{PARQUET}"
CASES = [
    # visual_questions
    ("missing column", with_datasets("visual_questions", lambda ds: ds.remove_columns("ques_clarity")),
     rf"{VQ}: missing column\(s\) \['ques_clarity'\] needed for O3-D visual_questions"),
    ("wrong dtype", with_datasets("visual_questions", lambda ds: ds.cast_column("ques_clarity", datasets.Value("string"))),
     rf"{VQ}: column 'ques_clarity' holds string values, expected float"),
    ("subset that does not exist", set_cell("visual_questions", "subset_name", 7, "kb-9cue"),
     rf"{VQ}, row 7, field 'subset_name': no subset 'kb-9cue' in the O3-D source .* \(it has: \['kb-0cue'"),
    ("image that does not exist", set_cell("visual_questions", "image_name", 7, "nope.png"),
     rf"{VQ}, row 7, field 'image_name': no image 'nope\.png' in subset 'kb-0cue'"),
    ("unknown clarity level", set_cell("visual_questions", "ques_clarity", 9, 5.0),
     rf"{VQ}, row 9, field 'ques_clarity': 5\.0 is not one of the clarity levels \[2\.0, 3\.0, 3\.5, 4\.0\]"),
    ("is_marked that is no boolean", with_datasets("visual_questions", lambda ds: ds.cast_column(
        "is_marked", datasets.Value("string")).map(lambda r, i: {"is_marked": "maybe" if i == 3 else r["is_marked"]},
                                                   with_indices=True)),
     rf"{VQ}, row 3, field 'is_marked': is_marked 'maybe' is not a boolean"),
    ("empty question text", set_cell("visual_questions", "question", 5, "   "),
     rf"{VQ}, row 5, field 'question': empty question text"),
    # subsets: metadata
    ("duplicate image names", set_cell("kb-1cue", "image_name", 3, lambda names: names[1]),
     rf"{KB1}, row 3, field 'image_name': duplicate image name '[^']+' \(also at \S*{KB1}, row 1\)"),
    ("missing ground-truth column", with_datasets("kb-1cue", lambda ds: ds.remove_columns("odd_position")),
     rf"{KB1}: subset 'kb-1cue' \(used by \S*{VQ}, row \d+\) lacks column 'odd_position'"),
    ("unknown odd_position", set_cell("kb-1cue", "odd_position", 2, "sideways"),
     rf"{KB1}, row 2, field 'odd_position': 'sideways' is not one of \['near', 'far', 'none'\]"),
    ("unknown cue code", set_cell("kb-1cue", "cues", 2, "['HP', 'XX']"),
     rf"{KB1}, row 2, field 'cues': unknown cue code\(s\) \['XX'\]"),
    ("cues that are no list", set_cell("kb-1cue", "cues", 2, "HP and SA"),
     rf"{KB1}, row 2, field 'cues': cues 'HP and SA' is not a list/tuple literal"),
    ("negative cue strength", set_cell("kb-1cue", "cue_strength", 2, -1.0),
     rf"{KB1}, row 2, field 'cue_strength': -1\.0 is negative"),
    ("depth scale with min > max", set_cell("kb-1cue", "depth_scale", 2, "{'min': 5.0, 'max': 1.0}"),
     rf"{KB1}, row 2, field 'depth_scale': min 5\.0 and max 1\.0 must be finite with 0 <= min < max"),
    ("depth scale that is no dict", set_cell("kb-1cue", "depth_scale", 2, "five to one"),
     rf"{KB1}, row 2, field 'depth_scale': depth_scale 'five to one' is not a dict literal"),
    # subsets: images (shown image, depth map, masks), whatever PIL's global says
    ("truncated PNG image", set_image("kb-1cue", "image", 0, bad.truncated_png()),
     rf"{KB1}, row 0, column 'image': damaged or truncated PNG image"),
    ("truncated depth map", set_image("kb-1cue", "depth_map", 1, bad.truncated_png()),
     rf"{KB1}, row 1, column 'depth_map': damaged or truncated PNG image"),
    ("truncated target mask", set_image("kb-1cue", "targ_seg", 2, bad.truncated_png()),
     rf"{KB1}, row 2, column 'targ_seg': damaged or truncated PNG image"),
    ("decompression bomb as a mask", set_image("kb-1cue", "dist_seg", 3, bad.png_with_header(90_000, 90_000)),
     rf"{KB1}, row 3, column 'dist_seg': image of 90000 x 90000 px is larger than the limit"),
    ("mask of another size than its image", set_image("kb-1cue", "targ_seg", 4, bad.png((37, 21))),
     rf"{KB1}, row 4, column 'targ_seg': 37 x 21 px, but its image '(augmented_image|image)' is 128 x 96 px "
     r"\(a targ_seg must match it pixel for pixel\)"),
    ("depth map of another size than its image", set_image("kb-0cue", "depth_map", 0, bad.png((64, 48))),
     rf"kb-0cue/{PARQUET}, row 0, column 'depth_map': 64 x 48 px, but its image"),
    ("unreadable marked photo", set_image("real-012cue-cropped", "marked_image", 1, bad.GARBAGE),
     rf"real-012cue-cropped/{PARQUET}, row 1, column 'marked_image': not a readable image"),
    ("truncated JPEG photo", set_image("real-mcue", "image", 0, bad.truncated_jpeg()),
     rf"real-mcue/{PARQUET}, row 0, column 'image': damaged or truncated JPEG image"),
    ("image path outside the dataset", set_image("kb-0cue", "image", 0, None, "../../../../etc/passwd"),
     rf"kb-0cue/{PARQUET}, row 0, column 'image': image path '\.\./\.\./\.\./\.\./etc/passwd' points outside"),
]


@pytest.mark.parametrize(("case", "edit", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_o3d_dataset(pristine, tmp_path, case, edit, message):
    root = Path(shutil.copytree(pristine, tmp_path / "O3-D"))
    edit(root)
    with pytest.raises(DataError) as err:
        load_checked(root, tmp_path)
    text = str(err.value)
    assert re.search(message, text), text
    assert "\n" not in text


def test_the_pristine_fixture_loads(pristine, tmp_path):
    docs = load_checked(Path(shutil.copytree(pristine, tmp_path / "O3-D")), tmp_path)
    assert len(docs) > 100


def test_row_numbers_are_rows_of_the_file_that_holds_them(pristine, tmp_path):
    """visual_questions in two files: row 100 of the split is named as row 100 - n of the second."""
    root = Path(shutil.copytree(pristine, tmp_path / "O3-D"))
    table = pq.read_table(_file(root, "visual_questions"))
    first = 80
    values = table.column("ques_clarity").to_pylist()
    values[100] = 7.0
    index = table.schema.get_field_index("ques_clarity")
    table = table.set_column(index, table.schema.field(index), pa.array(values, pa.float64()))
    _file(root, "visual_questions").unlink()
    pq.write_table(table.slice(0, first), root / "visual_questions" / "train-00000-of-00002.parquet")
    pq.write_table(table.slice(first), root / "visual_questions" / "train-00001-of-00002.parquet")
    card = (root / "README.md").read_text().replace(f"visual_questions/{PARQUET}", "visual_questions/train-*.parquet")
    (root / "README.md").write_text(card)
    with pytest.raises(DataError, match=r"visual_questions/train-00001-of-00002\.parquet, row 20, field 'ques_clarity'"):
        load_checked(root, tmp_path)


def test_an_empty_visual_questions(pristine, tmp_path):
    questions = datasets.Dataset.from_parquet(str(_file(pristine, "visual_questions")),
                                              cache_dir=str(tmp_path / "c")).select([])
    with pytest.raises(DataError, match=r"^vq\.parquet: visual_questions has no rows$"):
        load.build_docs(questions, {}, origin=Origin(label="vq", files=(("vq.parquet", 0),)))


def test_a_task_whose_filter_keeps_nothing_says_so(pristine, tmp_path):
    """o3d_real on data without real photos: a clear error, not a run over zero questions."""
    from spatial_tasks.o3d import slices, task_docs

    load.clear_registry()
    questions = datasets.load_dataset(str(pristine), "visual_questions", split="train",
                                      cache_dir=str(tmp_path / "c"))
    questions = questions.filter(lambda r: r["subset_name"] != "real-012cue-cropped")
    with pytest.raises(DataError, match=r"no marked questions about the subsets \['real-012cue-cropped'\]"):
        data = TaskData(task="o3d_real", path=str(pristine), name="visual_questions", split="train",
                        kwargs={"cache_dir": str(tmp_path / "c")})
        task_docs.build_task_docs(questions, data, subsets=slices.REAL_TASK_SUBSETS, marked=True)


def test_a_stale_row_is_detected(pristine, tmp_path):
    docs = load_checked(Path(shutil.copytree(pristine, tmp_path / "O3-D")), tmp_path)
    doc = dict(next(d for d in docs if d["subset_name"] == "kb-1cue" and not d["is_marked"]))
    doc["subset_row"] += 1
    with pytest.raises(DataError, match=rf"{KB1}, row \d+, column 'image': holds image_name '[^']+', expected"):
        load.image_for(doc)


def test_images_are_decoded_strictly_at_use_too(pristine, tmp_path):
    """Bytes that change after the check (or are checked with check_images=False) still fail at use."""
    root = Path(shutil.copytree(pristine, tmp_path / "O3-D"))
    set_image("kb-1cue", "image", 0, bad.truncated_png())(root)
    load.clear_registry()
    src = load.register_source(str(root), load_kwargs={"cache_dir": str(tmp_path / "c")})
    questions = datasets.load_dataset(str(root), "visual_questions", split="train", cache_dir=str(tmp_path / "c"))
    docs = load.build_docs(questions, src, subset_names=["kb-1cue"], marked=False, check_images=False)
    doc = next(d for d in docs if d["subset_row"] == 0)
    with pytest.raises(DataError, match=rf"{KB1}, row 0, column 'image': damaged or truncated PNG image"):
        load.image_for(doc)
    assert schema.SUBSETS  # the fixture covers every official subset
