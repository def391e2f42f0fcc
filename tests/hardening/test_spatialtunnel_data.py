"""SpatialTunnel data where it enters (spatial_tasks.spatialtunnel.load.to_docs): a table of bad
datasets -> the one-line error naming file, row and field. Datasets are real parquet folders in
our generator's layout (and real TSV files in the official style), loaded with ``datasets`` as
lmms-eval loads them, with PIL's LOAD_TRUNCATED_IMAGES switched on as lmms-eval does."""

from __future__ import annotations

import math
import re
from pathlib import Path

import datasets
import pytest
from PIL import ImageFile
from spatialtunnel.fakes import image_rows, write_official_tsv

from spatial_tasks.common.origin import Origin, origin_for
from spatial_tasks.common.validate import DataError
from spatial_tasks.spatialtunnel.load import SourceError, to_docs
from spatial_tasks.spatialtunnel.schema import IMAGE_FEATURES

from . import bad_images as bad

CONFIG = "phase_variation"


@pytest.fixture(autouse=True)
def lmms_eval_pil_settings(monkeypatch):
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)


def write_generated(root: Path, rows: list[dict], *, files: int = 1, transform=None) -> Path:
    """``rows`` as our generator writes them: <root>/phase_variation/test-0000k-of-0000n.parquet."""
    ds = datasets.Dataset.from_list(rows, features=IMAGE_FEATURES)
    if transform is not None:
        ds = transform(ds)
    (root / CONFIG).mkdir(parents=True, exist_ok=True)
    per_file = max(1, -(-len(ds) // files))
    for k in range(files):
        part = ds.select(range(k * per_file, min(len(ds), (k + 1) * per_file)))
        part.to_parquet(str(root / CONFIG / f"test-{k:05d}-of-{files:05d}.parquet"))
    (root / "README.md").write_text(f"---\nconfigs:\n- config_name: {CONFIG}\n  data_files:\n  - split: test\n"
                                    f"    path: {CONFIG}/test-*.parquet\n---\n")
    return root


def load_checked(root: Path, tmp_path: Path):
    ds = datasets.load_dataset(str(root), CONFIG, split="test", cache_dir=str(tmp_path / "hf-cache"))
    return to_docs(ds, origin_for(ds, str(root), CONFIG, "test"))


def _set(row: int, **values):
    def mutate(rows):
        rows[row].update(values)
    return mutate


def _question(row: int, k: int, **values):
    def mutate(rows):
        rows[row]["questions"][k].update(values)
    return mutate


def _image(row: int, data: bytes | None, path: str | None = None):
    return _set(row, image={"bytes": data, "path": path})


def _rows(mutate=None) -> list[dict]:
    rows = image_rows("phase", grid=4)  # 16 images of 64 x 64 px
    if mutate is not None:
        mutate(rows)
    return rows


FILE = rf"{CONFIG}/test-00000-of-00001\.parquet"
CASES = [
    # (case, mutate rows, transform the dataset, expected message)
    ("missing column", None, lambda ds: ds.remove_columns("pixel1"),
     r"looks like a spatial-tasks generated SpatialTunnel dataset .* lacks column\(s\) \['pixel1'\]"),
    ("no 'questions' never falls through to the TSV adapter", None, lambda ds: ds.remove_columns("questions"),
     r"looks like a spatial-tasks generated SpatialTunnel dataset .* lacks column\(s\) \['questions'\]"),
    ("wrong dtype", None, lambda ds: ds.cast_column("width", datasets.Value("string")),
     r"column 'width' holds string values, expected int"),
    ("answer not Yes/No", _question(2, 1, answer="Maybe"), None,
     rf"{FILE}, row 2, field 'questions\[1\]\.answer': 'Maybe' is not Yes or No"),
    ("answer contradicts the template", _question(2, 1, answer="No"), None,
     rf"{FILE}, row 2, field 'questions\[1\]\.answer': template 2 asks a question whose answer is Yes"),
    ("unknown template id", _question(5, 0, template_id=7), None,
     rf"{FILE}, row 5, field 'questions\[0\]\.template_id': unknown template id 7"),
    ("question text of another template", _question(5, 0, question="Is the red sphere red?"), None,
     rf"{FILE}, row 5, field 'questions\[0\]\.question': 'Is the red sphere red\?' is not template 1"),
    ("no questions", _set(4, questions=[]), None, rf"{FILE}, row 4, field 'questions': no questions"),
    ("NaN pixel position", _set(7, pixel1=[math.nan, 3.0]), None,
     rf"{FILE}, row 7, field 'pixel1': must be two finite numbers"),
    ("pixel position outside the image", _set(7, pixel2=[70.0, 10.0]), None,
     rf"{FILE}, row 7, field 'pixel2': \(70\.0, 10\.0\) is outside the 64 x 64 image"),
    ("zero image height", _set(3, height=0), None,
     rf"{FILE}, row 3, field 'height': image height must be a positive number of pixels, got 0"),
    ("duplicate image id", _set(3, image_id="phase-00-01-00"), None,
     rf"{FILE}, row 3, field 'image_id': duplicate image_id 'phase-00-01-00' \(also at \S*{FILE}, row 1\)"),
    ("angular position outside the grid", _set(9, theta1_index=4), None,
     rf"{FILE}, row 9, field 'theta1_index': 4 is not an angular position 0\.\.3"),
    ("obj1 not the farther object", _set(9, depth1=3.0), None,
     rf"{FILE}, row 9, field 'depth1': obj1 must be the farther object"),
    ("unknown variant", _set(0, variant="twist"), None, rf"{FILE}, row 0, field 'variant': 'twist' is not one of"),
    ("two objects with one name", _set(0, obj2="red sphere"), None,
     rf"{FILE}, row 0, field 'obj2': both objects are called 'red sphere'"),
    ("truncated PNG", _image(4, bad.truncated_png()), None,
     rf"{FILE}, row 4, column 'image': damaged or truncated PNG image"),
    ("unreadable image bytes", _image(4, bad.GARBAGE), None, rf"{FILE}, row 4, column 'image': not a readable image"),
    ("decompression bomb", _image(4, bad.png_with_header(60_000, 60_000)), None,
     rf"{FILE}, row 4, column 'image': image of 60000 x 60000 px is larger than the limit"),
]


@pytest.mark.parametrize(("case", "mutate", "transform", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_generated_dataset(tmp_path, case, mutate, transform, message):
    root = write_generated(tmp_path / "st", _rows(mutate), transform=transform)
    with pytest.raises(DataError) as err:
        load_checked(root, tmp_path)
    text = str(err.value)
    assert re.search(message, text), text
    assert "\n" not in text


def test_row_numbers_are_rows_of_the_file_that_holds_them(tmp_path):
    """Row 12 of the split is row 4 of the second of two files."""
    root = write_generated(tmp_path / "st", _rows(_set(12, height=0)), files=2)
    with pytest.raises(SourceError, match=rf"{CONFIG}/test-00001-of-00002\.parquet, row 4, field 'height'"):
        load_checked(root, tmp_path)


def test_an_empty_dataset(tmp_path):
    empty = datasets.Dataset.from_dict({name: [] for name in IMAGE_FEATURES}, features=IMAGE_FEATURES)
    with pytest.raises(SourceError, match=r"^data/st/test\.parquet: the dataset has no rows$"):
        to_docs(empty, Origin(label="st", files=(("data/st/test.parquet", 0),)))


def _path_only_cell(file: Path, row: int, path: str) -> None:
    """Rewrite one image cell of a parquet file to {bytes: None, path} (datasets would embed it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(file)
    cells = table.column("image").to_pylist()
    cells[row] = {"bytes": None, "path": path}
    index = table.schema.get_field_index("image")
    table = table.set_column(index, table.schema.field(index), pa.array(cells, table.schema.field(index).type))
    pq.write_table(table, file)


@pytest.mark.parametrize(("path", "message"), [
    ("img4.png", None),
    ("../../../../etc/passwd", r"image path '\.\./\.\./\.\./\.\./etc/passwd' points outside the dataset folder"),
    ("/etc/passwd", r"image path '/etc/passwd' points outside the dataset folder"),
    ("nothing-here.png", r"image file \S*nothing-here\.png does not exist"),
])
def test_a_path_only_image_is_read_only_inside_the_dataset_folder(tmp_path, path, message):
    root = write_generated(tmp_path / "st", _rows())
    (root / CONFIG / "img4.png").write_bytes(bad.png((64, 64)))
    _path_only_cell(root / CONFIG / "test-00000-of-00001.parquet", 4, path)
    if message is None:
        assert len(load_checked(root, tmp_path)) == 16 * 4
        return
    with pytest.raises(DataError, match=rf"{FILE}, row 4, column 'image': {message}"):
        load_checked(root, tmp_path)


def test_good_dataset_loads(tmp_path):
    docs = load_checked(write_generated(tmp_path / "st", _rows()), tmp_path)
    assert len(docs) == 16 * 4 and set(docs["answer"]) == {"Yes", "No"}


# ---- the official TSV --------------------------------------------------------------------------


def _tsv(tmp_path: Path, edit=None, **kwargs) -> Path:
    path = write_official_tsv(tmp_path / "phase_variation.tsv", **kwargs)
    if edit is not None:
        lines = path.read_text().splitlines()
        header = lines[0].split("\t")
        edit(lines, header)
        path.write_text("\n".join(lines) + "\n")
    return path


def _cell(data_row: int, column: str, value: str):
    def edit(lines, header):
        cells = lines[data_row + 1].split("\t")
        cells[header.index(column)] = value
        lines[data_row + 1] = "\t".join(cells)
    return edit


def _add_columns(**value_of_row):
    def edit(lines, header):
        for column, value in value_of_row.items():
            lines[0] += f"\t{column}"
            for k in range(1, len(lines)):
                lines[k] += f"\t{value(k - 1)}"
    return edit


TSV = r"phase_variation\.tsv"
TSV_CASES = [
    ("answer not Yes/No", _cell(3, "answer", "Maybe"), {},
     rf"{TSV}, row 3 \(line 5\), field 'answer': 'Maybe' is not Yes or No"),
    ("question not in the paper's wording", _cell(3, "question", "Which is closer?"), {},
     rf"{TSV}, row 3 \(line 5\), field 'question': 'Which is closer\?' \(answer Yes\) is not in the paper"),
    ("image not base64", _cell(2, "image", "@@@@"), {}, rf"{TSV}, row 2 \(line 4\), column 'image': not valid base64"),
    ("image base64 of garbage", _cell(2, "image", "bm90IGFuIGltYWdl"), {},
     rf"{TSV}, row 2 \(line 4\), column 'image': not a readable image"),
    ("NaN pixel position", _add_columns(x1=lambda r: "nan" if r == 6 else "10", y1=lambda r: "20"), {},
     rf"{TSV}, row 6 \(line 8\), field 'x1': empty value \(blank or NaN\)"),
    ("infinite pixel position", _add_columns(x1=lambda r: "inf" if r == 6 else "10", y1=lambda r: "20"), {},
     rf"{TSV}, row 6 \(line 8\), field 'x1': inf is not a finite number"),
    ("text in a number column", _add_columns(theta1_index=lambda r: "three" if r == 2 else "1"), {},
     rf"{TSV}, row 2 \(line 4\), field 'theta1_index': 'three' is not a number"),
    ("zero image height", _add_columns(height=lambda r: "0" if r == 6 else "64"), {},
     rf"{TSV}, row 6 \(line 8\), field 'height': image height must be a positive number of pixels"),
    ("duplicate question", _cell(5, "index", "1"), {},
     rf"{TSV}, row 5 \(line 7\): question 2 of image '1' appears twice \(also at \S*{TSV}, row 1"),
    ("neither format", None, {"drop": ("question", "obj1", "obj2")},
     rf"{TSV}: not a SpatialTunnel dataset in a known format: .*missing column\(s\) \['question'\]"),
]


@pytest.mark.parametrize(("case", "edit", "kwargs", "message"), TSV_CASES, ids=[c[0] for c in TSV_CASES])
def test_bad_official_tsv(tmp_path, case, edit, kwargs, message):
    path = _tsv(tmp_path, edit, **kwargs)
    ds = datasets.load_dataset("csv", data_files=str(path), delimiter="\t", split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    origin = origin_for(ds, "csv", None, "train", {"data_files": str(path)})
    with pytest.raises(DataError) as err:
        to_docs(ds, origin)
    text = str(err.value)
    assert re.search(message, text), text
    assert "\n" not in text
