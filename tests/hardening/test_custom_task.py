"""``spatial-tasks custom-task`` on bad and hostile input: a table of arguments -> the one-line
error, and what a good call writes (values through a YAML emitter, the file inside --out)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from spatialtunnel.fakes import write_generated

from spatial_tasks.catalog import HEADER, parse_prompt_options, write_custom_task
from spatial_tasks.paths import tasks_dir

O3D_SAMPLE = tasks_dir() / "o3d" / "sample"


@pytest.fixture(scope="module")
def st_data(tmp_path_factory) -> Path:
    return write_generated(tmp_path_factory.mktemp("st") / "data", variants=("phase",), grid=2)


BAD = [
    # (case, kwargs (st_data / tmp placeholders), exception, message)
    ("unknown base task", {"base_task": "spatialtunnel_nope", "data": "{st}"}, KeyError, r"no spatial-tasks task named"),
    ("path traversal in the name", {"name": "../../evil"}, ValueError, r"--name '\.\./\.\./evil': a task name is"),
    ("YAML in the name", {"name": "x\ninclude: /etc/passwd"}, ValueError, r"--name .*a task name is"),
    ("a name that is one of ours", {"name": "spatialtunnel_size"}, ValueError, r"already one of our tasks"),
    ("a local folder that does not exist", {"data": "{tmp}/nope"}, FileNotFoundError, r"--data .*nope: no such dataset folder"),
    ("a relative path that looks local", {"data": "./nope"}, FileNotFoundError, r"--data \./nope: no such dataset folder"),
    ("a typo next to a real folder", {"data": "{tmp_name}/dta"}, FileNotFoundError, r"no such dataset folder"),
    ("data that is a file", {"data": "{file}"}, ValueError, r"a local dataset must be a folder"),
    ("a config the data does not have", {"config": "size_variation"}, ValueError,
     r"has no config 'size_variation' \(it has: \['phase_variation'\]\); pass --config"),
    ("a split the data does not have", {"split": "validation"}, ValueError,
     r"--split validation: .* declares only the split\(s\) \['test'\]"),
    ("an unknown prompt parameter", {"data": None, "prompt": {"answer_instruction": "A:"}}, ValueError,
     r"--prompt answer_instruction: spatialtunnel_phase has no such prompt parameter \(it has: answer_suffix, pre_prompt\)"),
    ("nothing to change", {"data": None}, ValueError, r"nothing to change"),
    ("--split without --data", {"data": None, "split": "test"}, ValueError, r"--config and --split need --data"),
    ("an O3-D folder without visual_questions", {"base_task": "o3d_markers", "data": "{st}"}, ValueError,
     r"lacks the config 'visual_questions' \(the questions"),
]


def _resolve(value, st_data, tmp_path):
    if not isinstance(value, str):
        return value
    (tmp_path / "a_file").write_text("x")
    return value.format(st=st_data, tmp=tmp_path, file=tmp_path / "a_file", tmp_name=st_data.parent)


@pytest.mark.parametrize(("case", "kwargs", "error", "message"), BAD, ids=[c[0] for c in BAD])
def test_bad_custom_tasks_write_nothing(st_data, tmp_path, case, kwargs, error, message):
    args = {"base_task": "spatialtunnel_phase", "data": "{st}", **kwargs}
    args = {k: _resolve(v, st_data, tmp_path) for k, v in args.items()}
    out = tmp_path / "tasks"
    with pytest.raises(error, match=message) as err:
        write_custom_task(out=out, **args)
    assert "\n" not in str(err.value.args[0])
    assert not any(out.glob("*.yaml")) if out.exists() else True


def test_values_are_written_by_a_yaml_emitter(st_data, tmp_path):
    hostile = 'Answer:\n"task": hijacked\ninclude: /etc/passwd #'
    path = write_custom_task("o3d_sample_markers", None, tmp_path / "tasks", name="o3d_kosmos",
                             prompt={"answer_instruction": hostile})
    spec = yaml.safe_load(path.read_text())
    assert spec["task"] == "o3d_kosmos" and spec["include"].endswith("o3d_sample_markers.yaml")
    assert spec["lmms_eval_specific_kwargs"]["default"]["answer_instruction"] == hostile
    assert path.parent == (tmp_path / "tasks").resolve() and path.read_text().startswith(HEADER)


def test_a_yaml_custom_task_did_not_write_is_kept(st_data, tmp_path):
    out = tmp_path / "tasks"
    out.mkdir()
    (out / "mine.yaml").write_text("task: mine\n")
    with pytest.raises(FileExistsError, match=r"mine\.yaml: already exists and was not written by custom-task"):
        write_custom_task("spatialtunnel_phase", str(st_data), out, name="mine")
    assert (out / "mine.yaml").read_text() == "task: mine\n"
    write_custom_task("spatialtunnel_phase", str(st_data), out, name="mine", overwrite=True)
    write_custom_task("spatialtunnel_phase", str(st_data), out, name="mine")  # ours now: replaced freely


def test_a_local_folder_and_a_hub_id(st_data, tmp_path):
    local = yaml.safe_load(write_custom_task("spatialtunnel_phase", str(st_data), tmp_path / "t").read_text())
    assert (local["dataset_path"], local["dataset_name"], local["test_split"]) == (
        str(st_data.resolve()), "phase_variation", "test")
    hub = yaml.safe_load(write_custom_task("spatialtunnel_phase", "hub:someone/tunnel", tmp_path / "h").read_text())
    assert (hub["dataset_path"], hub["dataset_name"]) == ("someone/tunnel", "phase_variation")  # what publish writes


def test_hub_ids_in_the_official_spatialtunnel_layout(tmp_path):
    official = yaml.safe_load(write_custom_task("spatialtunnel_size", "cubec/spatialtunnel", tmp_path / "o",
                                                prompt={"answer_suffix": " Yes or no?"}).read_text())
    assert official["dataset_kwargs"] == {"revision": "96f48f3e6ab8738e87a151e7c8fc29954fa10fd6",
                                          "data_files": {"train": "size_variation.parquet"}}
    assert official["dataset_name"] is None and official["test_split"] == "train"
    mirror = yaml.safe_load(write_custom_task("spatialtunnel_phase", "hub:someone/mirror", tmp_path / "m",
                                              config="phase_variation.parquet").read_text())
    assert (mirror["dataset_path"], mirror["dataset_name"], mirror["dataset_kwargs"]) == (
        "someone/mirror", None, {"data_files": {"train": "phase_variation.parquet"}})


def test_a_local_looking_path_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    """data/st (not made yet) looks like ORG/NAME: it must not become a Hub id; nothing is written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match="data/st: no such dataset folder"):
        write_custom_task("spatialtunnel_phase", "data/st", tmp_path / "t")
    with pytest.raises(FileNotFoundError, match="hub:someone/st"):
        write_custom_task("spatialtunnel_phase", "someone/st", tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_the_kosmos2_prompt_for_o3d(tmp_path):
    spec = yaml.safe_load(write_custom_task("o3d_markers", str(O3D_SAMPLE), tmp_path / "t", name="o3d_markers_kosmos2",
                                            prompt={"answer_instruction": "Answer:"}).read_text())
    assert spec["lmms_eval_specific_kwargs"] == {"default": {"pre_prompt": "", "post_prompt": "",
                                                             "answer_instruction": "Answer:"}}
    assert spec["dataset_name"] == "visual_questions" and spec["test_split"] == "train"


@pytest.mark.parametrize(("items", "parsed"), [(["a=b"], {"a": "b"}), (["a="], {"a": ""}),
                                               (["a=b=c"], {"a": "b=c"}), ([" a =x"], {"a": "x"})])
def test_prompt_options(items, parsed):
    assert parse_prompt_options(items) == parsed


@pytest.mark.parametrize("item", ["novalue", "=x", "a b=c", "../x=1"])
def test_bad_prompt_options(item):
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_prompt_options([item])


def test_an_official_table_must_be_readable_and_recognised(tmp_path):
    """The official layout's <config>.parquet/.tsv is read far enough to know the task can read it:
    an empty table, unknown columns or a damaged file are refused before the YAML is written."""
    import datasets
    from spatialtunnel.fakes import write_official_tsv

    ok = tmp_path / "ok"
    ok.mkdir()
    write_official_tsv(ok / "phase_variation.tsv")
    assert write_custom_task("spatialtunnel_phase", str(ok), tmp_path / "t1").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    datasets.Dataset.from_dict({"index": [], "image": [], "question": [], "answer": []}).to_parquet(
        str(empty / "phase_variation.parquet"))
    with pytest.raises(ValueError, match=r"phase_variation.parquet: the table has no rows"):
        write_custom_task("spatialtunnel_phase", str(empty), tmp_path / "t2")
    odd = tmp_path / "odd"
    odd.mkdir()
    datasets.Dataset.from_dict({"picture": ["x"], "label": ["y"]}).to_parquet(str(odd / "phase_variation.parquet"))
    with pytest.raises(ValueError, match=r"phase_variation.parquet.*not a SpatialTunnel dataset in a known format"):
        write_custom_task("spatialtunnel_phase", str(odd), tmp_path / "t3")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "phase_variation.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"phase_variation.parquet: cannot read this table"):
        write_custom_task("spatialtunnel_phase", str(broken), tmp_path / "t4")
    assert not any((tmp_path / t).exists() for t in ("t2", "t3", "t4"))


def test_a_dori_folder_must_hold_the_task_questions(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty"):
        write_custom_task("dori_canonical_orientation_coarse", str(tmp_path / "empty"), tmp_path / "t")
    with pytest.raises(ValueError, match=r"no view_parallelism_coarse questions \(it has: "):
        write_custom_task("dori_view_parallelism_coarse", str(tasks_dir() / "dori" / "sample"), tmp_path / "t")
    assert not (tmp_path / "t").exists()
