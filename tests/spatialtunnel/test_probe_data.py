"""Probing pairs enter through probe.data.load_probe_pairs: the three layouts, §D.1 distance pairs,
and one clear error per bad field."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from spatial_tasks.common.validate import DataError
from spatial_tasks.spatialtunnel.probe.data import TEMPLATES, ProbeDataError, load_probe_pairs, question_pair

from .fakes import b64, png, prompt_rows, write_prompt_parquet, write_tsv


def test_templates_round_trip():
    for axis, template in TEMPLATES.items():
        text = template.format(query="red cube", reference="blue sphere")
        assert question_pair(text) == (axis, "red cube", "blue sphere")
    assert question_pair("Is the red cube left of the blue sphere?") is None


def test_prompt_layout_parquet(tmp_path):
    data = load_probe_pairs(write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows()))
    assert data.layout == "prompts"
    assert data.counts() == {label: 2 for label in ("left", "right", "above", "below", "far", "close")}
    pair = data.pairs[4]  # above, k=0
    assert (pair.label, pair.query, pair.reference, pair.axis) == ("above", "red cube", "blue sphere", "V")
    assert pair.question() == "Is the red cube above or below the blue sphere? Answer with only one word."
    assert pair.swapped_question() == "Is the blue sphere above or below the red cube? Answer with only one word."
    far = data.pairs[8]
    assert far.swapped_question() == "Compared to red cube, is blue sphere far or close from you? Answer with only one word."
    assert pair.image == png(4)


def test_object_layout_tsv(tmp_path):
    rows = [{"index": 0, "category": "left", "image": b64(0), "answer": "left", "A": "red cube", "B": "blue sphere"},
            {"index": 1, "category": "under", "image": b64(1), "answer": "under", "A": "green cube", "B": "red cube"},
            {"index": 2, "category": "far", "image": b64(2), "answer": "B", "A": "red cube", "B": "blue sphere"},
            {"index": 3, "category": "close", "image": b64(3), "answer": "A", "A": "None", "B": "blue sphere"}]
    data = load_probe_pairs(write_tsv(tmp_path / "cp.tsv", rows, ["index", "category", "image", "answer", "A", "B"]))
    assert data.layout == "objects"
    got = [(p.label, p.query, p.reference) for p in data.pairs]
    assert got == [("left", "red cube", "blue sphere"), ("below", "green cube", "red cube"),
                   ("far", "blue sphere", "red cube"), ("close", "None", "blue sphere")]  # "None" stays a name


def test_mcq_layout_distance_pairs_follow_d1(tmp_path):
    """App. D.1: the target is the correct option, the reference is drawn uniformly from the other
    options (seeded); unknown options are never drawn and an unknown target skips the row."""
    columns = ["index", "question_id", "category", "question", "image", "answer", "A", "B", "C", "D"]
    rows = [{"index": i, "question_id": f"q{i}", "category": "far", "question": "Which object is farthest from you?",
             "image": b64(i), "answer": "C", "A": "sofa", "B": "Unknown", "C": "lamp", "D": "table"} for i in range(40)]
    rows.append({"index": 40, "question_id": "q40", "category": "close", "question": "Which is closest?",
                 "image": b64(40), "answer": "A", "A": "unknown", "B": "sofa", "C": "lamp", "D": "table"})
    path = write_tsv(tmp_path / "mcq.tsv", rows, columns)
    data = load_probe_pairs(path, seed=3)
    assert len(data.pairs) == 40 and data.skipped == Counter({"distance target unknown": 1})
    assert {p.query for p in data.pairs} == {"lamp"}
    references = Counter(p.reference for p in data.pairs)
    assert set(references) == {"sofa", "table"} and min(references.values()) >= 10  # uniform over the two
    again = load_probe_pairs(path, seed=3)
    assert [p.reference for p in again.pairs] == [p.reference for p in data.pairs]
    other = load_probe_pairs(path, seed=4)
    assert [p.reference for p in other.pairs] != [p.reference for p in data.pairs]


def test_mcq_layout_relation_pairs_take_objects_from_the_question(tmp_path):
    columns = ["index", "category", "question", "image", "answer", "A", "B", "C", "D"]
    rows = [{"index": 0, "category": "left", "question": "How are the sofa and the lamp positioned in relation to each "
             "other in the image?", "image": b64(0), "answer": "B", "A": "The sofa is above the lamp.",
             "B": "The lamp is left of the sofa.", "C": "x", "D": "y"},
            {"index": 1, "category": "above", "question": "What is the positional relationship between the cup and "
             "the shelf in the image?", "image": b64(1), "answer": "A", "A": "The cup is above the shelf.",
             "B": "b", "C": "c", "D": "d"}]
    data = load_probe_pairs(write_tsv(tmp_path / "emb.tsv", rows, columns))
    # row 0: the correct option names the lamp first, so the lamp is the query ("the lamp is left of the sofa")
    assert [(p.label, p.query, p.reference) for p in data.pairs] == [("left", "lamp", "sofa"), ("above", "cup", "shelf")]


def test_per_category_cap_draws_as_the_authors_do(tmp_path):
    """The authors' extract_swap_features: one random.Random(42), the answers in CATEGORY_ORDER,
    rng.sample only where a category has more pairs than the cap -- whatever --seed says."""
    import random

    from spatial_tasks.spatialtunnel.probe.data import CATEGORY_ORDER

    path = write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows(5))
    everything = load_probe_pairs(path, per_category=0)
    data = load_probe_pairs(path, per_category=2, seed=1)
    assert data.counts() == {label: 2 for label in CATEGORY_ORDER} and data.capped == 30 - 12
    rng = random.Random(42)
    expected = set()
    for label in CATEGORY_ORDER:
        group = [p.pair_id for p in everything.pairs if p.label == label]
        expected |= set(rng.sample(group, 2))
    assert {p.pair_id for p in data.pairs} == expected
    ids = [int(p.pair_id) for p in data.pairs]
    assert ids == sorted(ids)  # the source order is kept
    assert [p.pair_id for p in load_probe_pairs(path, per_category=2, seed=7).pairs] == [p.pair_id for p in data.pairs]


def test_the_default_cap_is_the_authors_200_and_zero_keeps_every_pair(tmp_path):
    path = write_prompt_parquet(tmp_path / "cp.parquet", prompt_rows(205 // 6 + 1))
    assert len(load_probe_pairs(path).pairs) == len(load_probe_pairs(path, per_category=0).pairs)  # < 200 each
    with pytest.raises(ValueError, match="--per-category must be an integer >= 0"):
        load_probe_pairs(path, per_category=-1)


def test_folder_source_reads_every_parquet(tmp_path):
    rows = prompt_rows()
    (tmp_path / "probing").mkdir()
    write_prompt_parquet(tmp_path / "probing" / "test-00000-of-00002.parquet", rows[:6])
    write_prompt_parquet(tmp_path / "probing" / "test-00001-of-00002.parquet", rows[6:])
    assert len(load_probe_pairs(tmp_path).pairs) == 12


def _bad_prompt(tmp_path, **change) -> Path:
    rows = prompt_rows(1)
    rows[3].update(change)
    return write_prompt_parquet(tmp_path / "bad.parquet", rows)


@pytest.mark.parametrize("change, message", [
    ({"answer": "up"}, r"row 3, field 'answer': 'up' is not one of"),
    ({"answer": "left"}, r"row 3, field 'answer': 'left' does not answer a V-axis question"),
    ({"question": "Is the cube above the ball?"}, r"row 3, field 'question': .* none of the three probing templates"),
    ({"question": TEMPLATES["V"].format(query="red cube", reference="Red Cube")}, "the two objects are the same"),
])
def test_rows_that_cannot_make_a_pair_are_skipped_counted_and_named(tmp_path, change, message):
    """As the authors' code: one odd row does not stop the run; it is counted and named. --strict
    refuses the file instead."""
    path = _bad_prompt(tmp_path, **change)
    data = load_probe_pairs(path)
    assert len(data.pairs) == 5 and data.skipped == {"cannot make a pair": 1}
    assert len(data.skipped_rows) == 1 and re.search(message, data.skipped_rows[0])
    assert "bad.parquet" in data.skipped_rows[0]
    with pytest.raises(ProbeDataError, match=message + ".*--strict refuses"):
        load_probe_pairs(path, strict=True)


@pytest.mark.parametrize("change, message", [
    ({"index": 0}, r"row 3, field 'index': duplicate index '0' \(also at .*row 0\)"),
    ({"image": {"bytes": png(0)[:60], "path": None}}, r"row 3, column 'image'.*(damaged|truncated|not a readable)"),
])
def test_damaged_data_is_an_error_naming_the_row(tmp_path, change, message):
    with pytest.raises(DataError, match=message) as info:  # ProbeDataError, or ImageError for an image
        load_probe_pairs(_bad_prompt(tmp_path, **change))
    assert "bad.parquet" in str(info.value)


def test_only_the_first_skipped_rows_are_named(tmp_path):
    rows = prompt_rows(2)
    for row in rows[:8]:
        row["answer"] = "sideways"
    data = load_probe_pairs(write_prompt_parquet(tmp_path / "odd.parquet", rows))
    assert data.skipped == {"cannot make a pair": 8} and len(data.skipped_rows) == 5 and len(data.pairs) == 4


def test_bad_tsv_rows_are_named(tmp_path):
    columns = ["index", "category", "image", "answer", "A", "B"]
    good = {"index": 0, "category": "left", "image": b64(0), "answer": "left", "A": "cube", "B": "ball"}
    cases = [({"category": "behind"}, r"cp.tsv, row 1 \(line 3\), field 'category': 'behind' is not one of"),
             ({"category": "far", "answer": "Z"}, r"field 'answer': 'Z' is not an option letter"),
             ({"answer": "right"}, r"field 'answer': 'right' is neither the category 'left' nor an option letter"),
             ({"B": ""}, r"field 'B': empty object name")]
    for change, message in cases:
        path = write_tsv(tmp_path / "cp.tsv", [good, {**good, "index": 1, **change}], columns)
        assert re.search(message, load_probe_pairs(path).skipped_rows[0])
        with pytest.raises(DataError, match=message):
            load_probe_pairs(path, strict=True)
    path = write_tsv(tmp_path / "cp.tsv", [good, {**good, "index": 1, "image": "not base64!"}], columns)
    with pytest.raises(DataError, match=r"row 1 \(line 3\), column 'image': not valid base64"):
        load_probe_pairs(path)


@pytest.mark.parametrize("columns, message", [
    (["index", "image", "question"], r"missing column\(s\) \['answer'\]"),
    (["index", "category", "image", "answer", "A"], r"a 'category' table needs columns \['B'\]"),
    (["index", "question", "answer"], "no 'image' column"),
])
def test_missing_columns_are_named(tmp_path, columns, message):
    path = write_tsv(tmp_path / "cols.tsv", [{c: "x" for c in columns}], columns)
    with pytest.raises(ProbeDataError, match=message):
        load_probe_pairs(path)


def test_bad_sources(tmp_path):
    with pytest.raises(ProbeDataError, match="no such file or folder"):
        load_probe_pairs(tmp_path / "missing.tsv")
    (tmp_path / "x.csv").write_text("a\n")
    with pytest.raises(ProbeDataError, match=r"must be a \.parquet or \.tsv file"):
        load_probe_pairs(tmp_path / "x.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProbeDataError, match="no .parquet or .tsv file"):
        load_probe_pairs(tmp_path / "empty")
    with pytest.raises(ProbeDataError, match="name the file of this Hub dataset"):
        load_probe_pairs("someone/other-dataset")


def test_bundled_probing_sample_is_balanced_and_valid():
    from spatial_tasks.paths import benchmark_tasks_dir

    data = load_probe_pairs(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing")
    assert data.layout == "prompts" and data.counts() == {label: 4 for label in
                                                          ("left", "right", "above", "below", "far", "close")}


def test_official_source_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ProbeDataError, match=r"cubec/spatialtunnel: could not get contrastive_probing.tsv of the Hub "
                                             r"dataset cubec/spatialtunnel \("):
        load_probe_pairs("cubec/spatialtunnel")


def _authors_distance_pairs(path: Path, seed: int = 42) -> list[tuple[str, str, str]]:
    """The authors' reading of a far/close row, restated from their probing code's behaviour: pandas'
    read_csv (empty cells and "n/a" become NaN), a filter of empty / "unknown" / "n/a" that lets NaN
    through as the text "nan", candidates in option order (the target's duplicates kept), one
    random.Random(seed) stream over the rows in order."""
    import random

    import pandas as pd

    def valid(value: object) -> bool:
        return bool(value) and str(value).strip().lower() not in {"unknown", "n/a"}

    rng = random.Random(seed)
    out = []
    for row in pd.read_csv(path, sep="\t").to_dict("records"):
        if str(row["category"]).lower() not in ("far", "close"):
            continue
        options = {key: row[key] for key in ("A", "B", "C", "D")}
        query = str(options[str(row["answer"])])
        candidates = [str(v) for k, v in options.items() if k != str(row["answer"]) and valid(v)]
        if not valid(query) or not candidates:
            continue
        out.append((str(row["category"]).lower(), query, rng.choice(candidates)))
    return out


def test_the_authors_empty_options_read_as_nan_on_request(tmp_path):
    """Issue 44: in the released contrastive_probing.tsv layout far/close rows leave C and D empty; the
    authors' code then asks "Compared to nan, ...". ``empty_options="as-nan"`` gives exactly their pairs
    (same references, drawn from the same stream); the default never names "nan"."""
    columns = ["index", "category", "image", "answer", "A", "B", "C", "D"]
    objects = ["chair", "sofa", "lamp", "table", "bed", "desk"]
    rows = []
    for i in range(24):
        row = {"index": i, "category": ("far", "close")[i % 2], "image": b64(i), "answer": "AB"[i % 3 == 0],
               "A": objects[i % 6], "B": objects[(i + 1) % 6], "C": "", "D": ""}
        if i % 4 == 1:
            row["C"] = objects[(i + 2) % 6]
        if i % 5 == 2:
            row["D"] = "n/a" if i % 2 else "unknown"
        rows.append(row)
    rows.append({"index": 24, "category": "left", "image": b64(24), "answer": "left", "A": "chair", "B": "sofa"})
    path = write_tsv(tmp_path / "contrastive_probing.tsv", rows, columns)

    want = _authors_distance_pairs(path)
    authors = load_probe_pairs(path, empty_options="as-nan")
    got = [(p.label, p.query, p.reference) for p in authors.pairs if p.axis == "D"]
    assert got == want and len(got) == 24
    asked_nan = [p for p in authors.pairs if p.reference == "nan"]
    assert 5 <= len(asked_nan) < 24  # "Compared to nan, is chair far or close ..."
    assert asked_nan[0].question().startswith("Compared to nan, is ")
    ours = load_probe_pairs(path)
    assert len(ours.pairs) == 25 and not [p for p in ours.pairs if "nan" in (p.query, p.reference)]
    assert [p.label for p in ours.pairs] == [p.label for p in authors.pairs]  # the same rows, other references
    with pytest.raises(ValueError, match="--empty-options must be one of skip, as-nan"):
        load_probe_pairs(path, empty_options="nan")
