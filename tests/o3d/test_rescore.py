"""Re-scoring the O3-D authors' released outputs reproduces the paper's Table 12."""

from __future__ import annotations

import gzip
import json
from math import isnan
from pathlib import Path

import pytest

from spatial_tasks.o3d.rescore import (
    ReleasedFormatError,
    compare_to_paper,
    records_from_released,
    rescore_released,
)

RELEASED = Path(__file__).with_name("data") / "released_outputs_5models.jsonl.gz"  # tests/o3d/data/README.md

# Paper Table 12, the cells that the release can reproduce (tasks/o3d/README.md).
_TABLE = """
model                  HP     OC     RS     TG     SA     LS     FO     FS     sim0   sim1   real0  real1  real2
blip2-flan-t5-xl       .4979  .4912  .4875  .4865  .4984  .5031  .5078  .5000  .4906  .4984  .4000  .5294  .5000
InternVL2_5-4B         .5863  .5036  .5177  .4912  .4891  .4953  .5166  .5308  .5073  .5009  .4500  .5294  .7143
llava-v1.5-7b          .5052  .4953  .5120  .4969  .5062  .4943  .5068  .4923  .5042  .5061  .6000  .4118  .5000
paligemma2-3b-mix-224  .4974  .4631  .5172  .4574  .4470  .4449  .4501  .4692  .4376  .4589  .5000  .6471  .6905
VILA1.5-3b             .5000  .5062  .5166  .4948  .5078  .5021  .5057  .4538  .5218  .4975  .4500  .4412  .4048
"""
_HEADER, *_ROWS = (line.split() for line in _TABLE.strip().splitlines())
COLUMNS = tuple(_HEADER[1:])
EXPECTED = {row[0]: tuple(float(v) for v in row[1:]) for row in _ROWS}


@pytest.fixture(scope="module")
def both_ddofs() -> tuple[dict, dict]:
    """The release rescored with the paper's ddof 0 and the authors' ddof 1, its 245 MB read once
    for both, as the command reads it (its records handed to both)."""
    records = records_from_released(RELEASED)
    return rescore_released(RELEASED, records=records), rescore_released(RELEASED, ddof=1, records=records)


@pytest.fixture(scope="module")
def released(both_ddofs) -> dict:
    return both_ddofs[0]


def test_all_65_reproducible_cells_match_the_paper(released):
    mismatches = []
    for model, values in EXPECTED.items():
        summary = released["models"][model]
        for col, paper in zip(COLUMNS, values):
            if isnan(summary[col]) or round(summary[col], 4) != paper:
                mismatches.append((model, col, summary[col], paper))
    assert mismatches == []
    cells = compare_to_paper(released)
    assert len(cells) == 65 and all(c["match"] for c in cells)


def test_released_row_counts_and_extras(released):
    assert released["rows"] == 337891 and set(released["models"]) == set(EXPECTED)
    for summary in released["models"].values():
        n = summary["n"]
        counts = [n[c] for c in ("HP", "FS", "sim0", "sim1", "sim2", "real0", "real1", "real2")]
        assert counts == [1924, 130, 962, 6864, 130, 20, 34, 42]
        assert -1 <= summary["bias_nf"] <= 1
        assert 0 <= summary["sdgm_vision"] < summary["sdgm_language"]  # the paper's headline finding
        assert n["sdgm_language"]["groups"] == 42
        assert set(summary["modified_sdgm"]) == {"query", "order", "formality", "vocabulary", "clarity_level"}
    models = released["models"]
    assert models["VILA1.5-3b"]["n"]["sdgm_vision"]["groups"] == 36
    assert models["InternVL2_5-4B"]["n"]["sdgm_vision"]["groups"] == 9  # no kb-2cue rows released
    assert round(models["InternVL2_5-4B"]["unparseable"], 3) == 0.004
    assert round(models["paligemma2-3b-mix-224"]["unparseable"], 3) == 0.019
    assert models["blip2-flan-t5-xl"]["unparseable"] == 0
    json.dumps(released)  # JSON-ready


@pytest.mark.slow
def test_sample_std_is_larger_by_the_bessel_factor(both_ddofs):
    released, sample = both_ddofs
    for model, summary in released["models"].items():
        groups = summary["n"]["sdgm_language"]["groups"]
        assert sample["models"][model]["sdgm_language"] == pytest.approx(
            summary["sdgm_language"] * (groups / (groups - 1)) ** 0.5
        )
        assert sample["models"][model]["HP"] == summary["HP"]


# ---------------------------------------------------------------------------------------------
# Small hand-made files
# ---------------------------------------------------------------------------------------------

Q = (
    "Is the object marked with a red circle closer to or farther away from the viewer than the objects marked "
    "with a blue square? A. Closer. B. Farther. Answer A or B."
)


def row(
    name,
    answer,
    gt="far",
    cues=("HP",),
    family="kb-1cue",
    clarity=4,
    strength=None,
    source="inferred-timestamp-pair-parity",
    model="m",
    marked=True,
    **extra,
):
    return {
        "model": model,
        "image_family": family,
        "is_marked": marked,
        "notebook_lists": ["SINGLE_CUE_RESULT_PATHS"],
        "image_name": name,
        "orig_image_name": name,
        "icl": None,
        "cot": None,
        "ques": Q,
        "ques_clarity": clarity,
        "answer": answer,
        "gt_position": gt,
        "cues": list(cues) if isinstance(cues, (list, tuple)) else cues,
        "cue_strength": strength,
        "cue_strength_source": source,
        **extra,
    }


def _rows():
    # four HP renders of far targets: by timestamp order strength 1, 2, 1, 2
    return [
        row("260101000001_far_HP.png", "B"),
        row("260101000020_far_HP.png", "A"),
        row("260101000050_far_HP.png", "A"),
        row("260101000070_far_HP.png", "B"),
        row("260101000100_far_.png", "B", cues=(), family="kb-0cue", source="metadata"),
        row("260101000200_far_.png", "A", gt="none", cues=(), family="kb-0cue", source="metadata"),
        row("img_1.jpg", "Maybe", gt="near", cues=(), family="o3dcf-real", strength=0.0, source="metadata"),
    ]


def _write(path: Path, rows, gz=False):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_strength_parity_and_cells(tmp_path):
    out = rescore_released(_write(tmp_path / "r.jsonl", _rows()))["models"]["m"]
    assert (out["HP"], out["n"]["HP"]) == (0.5, 4)  # all strengths
    assert (out["sim1"], out["n"]["sim1"]) == (0.5, 2)  # 1st and 3rd render only: "B" right, "A" wrong
    assert (out["sim0"], out["n"]["sim0"]) == (1.0, 1)  # the gt-none row is not scored
    assert (out["real0"], out["n"]["real0"]) == (0.0, 1)  # unparseable counts wrong
    assert isnan(out["OC"]) and out["n"]["OC"] == 0  # absent rows -> NaN (null in --json), n 0
    assert isnan(out["sim2"]) and out["n"]["sim2"] == 0
    assert out["unparseable"] == pytest.approx(1 / 7)
    strengths = [r["cue_strength"] for r in records_from_released(tmp_path / "r.jsonl")[:4]]
    assert strengths == [1.0, 2.0, 1.0, 2.0]


def test_gzip_and_plain_agree(tmp_path):
    plain = rescore_released(_write(tmp_path / "r.jsonl", _rows()))
    packed = rescore_released(_write(tmp_path / "r.jsonl.gz", _rows(), gz=True))
    assert json.dumps(plain["models"]) == json.dumps(packed["models"])  # NaN == NaN as text


def test_single_strength_sets_are_regular(tmp_path):
    rows = [
        row("a.png", "B", cues=("FS",), source="single-strength-set"),
        row("b.png", "B", cues=("HP", "OC"), family="kb-2cue", source="single-strength-set"),
    ]
    out = rescore_released(_write(tmp_path / "r.jsonl", rows))["models"]["m"]
    assert (out["FS"], out["sim1"], out["sim2"]) == (1.0, 1.0, 1.0)


def test_cue_lists_may_be_string_reprs(tmp_path):
    rows = [row("a.png", "B", cues="['OC']", source="single-strength-set"),
            row("b.png", "B", cues=None, family="kb-0cue", source="metadata")]
    out = rescore_released(_write(tmp_path / "r.jsonl", rows))["models"]["m"]
    assert (out["n"]["OC"], out["n"]["sim0"]) == (1, 1)
    (tmp_path / "bad.jsonl").write_text(json.dumps(row("a.png", "B", cues="HP,OC")) + "\n", encoding="utf-8")
    with pytest.raises(ReleasedFormatError, match=r"bad.jsonl:1: cues 'HP,OC' is not a list"):
        rescore_released(tmp_path / "bad.jsonl")


def test_unlisted_files_and_other_clarity_are_left_out(tmp_path):
    rows = [row("a.png", "B", notebook_lists=[]), row("b.png", "B", clarity=3.5, marked=False)]
    out = rescore_released(_write(tmp_path / "r.jsonl", rows))["models"]["m"]
    assert out["n"]["HP"] == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"model": "m"}\n', r"r.jsonl:1: missing field"),
        ("not json\n", r"r.jsonl:1: not a JSON object"),
        ("[1, 2]\n", r"r.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_files_name_the_line(tmp_path, content, message):
    (tmp_path / "r.jsonl").write_text(content, encoding="utf-8")
    with pytest.raises(ReleasedFormatError, match=message):
        rescore_released(tmp_path / "r.jsonl")


def test_missing_file_and_bad_ddof(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        rescore_released(tmp_path / "absent.jsonl")
    with pytest.raises(ValueError, match="ddof"):
        rescore_released(tmp_path / "absent.jsonl", ddof=2)
