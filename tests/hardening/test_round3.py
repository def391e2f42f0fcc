"""Reliability round 3 (issue 32): nothing dropped without a word, on real runs of every benchmark."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lmms import SPATIAL_TASKS, run_cli

from spatial_tasks.common.owned import LEDGER
from spatial_tasks.registry import benchmarks, read_runs

BENCHMARKS = tuple(benchmarks())  # the registry: a benchmark added there is checked here too


def _golden_run_of(golden_runs: Path, benchmark: str) -> Path:
    """The golden run (tests/golden_figures.py) whose samples are ``benchmark``'s records."""
    from spatial_tasks.common.samples import samples_benchmark

    for folder in sorted(p for p in golden_runs.iterdir() if p.is_dir()):
        if any(samples_benchmark(path) == benchmark for path in folder.rglob("*_samples_*.jsonl")):
            return folder
    raise AssertionError(f"no golden run holds {benchmark}'s samples: add one to tests/golden_figures.py RUNS")


def _first_samples_file(run: Path) -> Path:
    return min(run.rglob("*_samples_*.jsonl"))


def _spoil_first_line(path: Path, how: str) -> None:
    """The first line's logged record removed, or a string in its place (every key that holds it)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    keys = [k for k, v in first.items() if isinstance(v, dict) and "benchmark" in v]
    assert keys, "the first line holds no logged record to spoil"
    for key in keys:
        if how == "missing":
            del first[key]
        else:
            first[key] = "a string where the record was"
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_first_line_without_its_record_is_named_not_dropped(benchmark, golden_runs, tmp_path):
    """Regression (issue 32, item 2): the first sample decided whether a file was ours, so a first
    line that lost its record (or holds a string in its place) made the whole task vanish with exit
    0. Every line is now scored or named: rescore and results stop, naming the file and line 1."""
    run = tmp_path / benchmark
    shutil.copytree(_golden_run_of(golden_runs, benchmark), run)
    spoiled = _first_samples_file(run)
    original = spoiled.read_text(encoding="utf-8")
    commands = [("a string", ["rescore", benchmark, str(run), "--json"])]
    if benchmarks()[benchmark].scorecard is not None:  # `results` holds the headline records of scorecard benchmarks
        commands.append(("missing", ["results", str(run), "--out", str(tmp_path / "results")]))
    for how, argv in commands:
        spoiled.write_text(original, encoding="utf-8")
        _spoil_first_line(spoiled, how)
        out = run_cli([SPATIAL_TASKS, *argv], capture_output=True, text=True, check=False)
        assert out.returncode == 2, (how, argv, out.stdout[-500:], out.stderr[-500:])
        assert f"{spoiled.name}:1: no {benchmark} record under" in out.stderr, (how, argv, out.stderr[-800:])


def test_the_demo_stops_when_its_first_evaluations_fail_the_same_way(tmp_path, monkeypatch):
    """Issue 32, item 9: 16 evaluations that would each fail on one broken install (the filelock
    case) stop after the first two, naming the cause once."""
    from spatial_tasks import demo
    from spatial_tasks.common.samples import RunFailed

    broken = [sys.executable, "-c", "import sys; print('Traceback (most recent call last):'); "
              "print(\"ImportError: cannot import name '_api' from 'filelock'\"); sys.exit(1)"]
    runs = [(f"run {i}", broken, tmp_path / "demo" / "runs" / str(i), "spatialtunnel_sample") for i in range(16)]
    (tmp_path / "demo" / "tiny-qwen2_5_vl").mkdir(parents=True)
    (tmp_path / "demo" / "tiny-qwen2_5_vl" / "config.json").write_text("{}")
    (tmp_path / "demo" / "tiny-gemma3").mkdir()
    (tmp_path / "demo" / "tiny-gemma3" / "config.json").write_text("{}")
    monkeypatch.setattr(demo, "demo_runs", lambda model_dir, out, gemma_dir=None: runs)
    monkeypatch.setattr("spatial_tasks.harness.check_runtime", lambda: None)
    with pytest.raises(RunFailed) as failed:
        demo.run_demo(tmp_path / "demo", workers=2)
    message = str(failed.value)
    assert re.match(r"the first 2 evaluations failed the same way, so (\d+) of the other 14 were not started: "
                    r"ImportError: cannot import name '_api' from 'filelock' \(logs in ", message), message
    skipped = int(re.match(r".*?so (\d+) of", message).group(1))
    started = len(list((tmp_path / "demo" / "logs").glob("*.log")))
    assert message.count("ImportError") == 1 and skipped >= 8 and started == 16 - skipped


def test_evaluations_that_fail_in_different_ways_all_run(tmp_path, monkeypatch):
    from spatial_tasks import demo
    from spatial_tasks.common.samples import RunFailed

    runs = [(f"run {i}", [sys.executable, "-c", f"print('problem {i}'); raise SystemExit(1)"],
             tmp_path / "demo" / "runs" / str(i), "spatialtunnel_sample") for i in range(3)]
    for folder in ("tiny-qwen2_5_vl", "tiny-gemma3"):
        (tmp_path / "demo" / folder).mkdir(parents=True)
        (tmp_path / "demo" / folder / "config.json").write_text("{}")
    monkeypatch.setattr(demo, "demo_runs", lambda model_dir, out, gemma_dir=None: runs)
    monkeypatch.setattr("spatial_tasks.harness.check_runtime", lambda: None)
    with pytest.raises(RunFailed, match="3 of 3 evaluations failed"):
        demo.run_demo(tmp_path / "demo", workers=2)


def _run_cli(argv: list[str]) -> subprocess.CompletedProcess:
    return run_cli([SPATIAL_TASKS, *argv], capture_output=True, text=True, check=False)


def test_report_and_results_merge_what_they_replace_and_never_overwrite_a_file_they_cannot_read(golden_runs,
                                                                                                  tmp_path):
    """Issue 32, item 1: a leaderboard kept only as .csv is merged (not replaced) by the next report,
    as the .json is; ``results --out`` merges the records already there; and a leaderboard or
    results file that cannot be read stops the command, naming it, and is left byte for byte."""
    from spatial_tasks.registry import read_runs
    from spatial_tasks.report import write_report
    from spatial_tasks.results.schema import RecordFileError, read_record_file

    report = tmp_path / "report"
    write_report(read_runs(golden_runs / "dori"), report)
    dori_rows = read_record_file(report / "leaderboard.csv")
    assert dori_rows and {r.benchmark for r in dori_rows} == {"dori"}
    (report / "leaderboard.json").unlink()  # only the CSV is left
    write_report(read_runs(golden_runs / "spatialtunnel"), report)
    for name in ("leaderboard.csv", "leaderboard.json"):
        merged = read_record_file(report / name)
        assert {r.benchmark for r in merged} == {"dori", "spatialtunnel"}, name
        assert [r for r in merged if r.benchmark == "dori"] == dori_rows, name

    for name, damage in (("leaderboard.json", b"{\"records\": [1, 2"), ("leaderboard.json", b""),
                         ("leaderboard.json", b"[]"), ("leaderboard.csv", b"model,colour\nm,red\n")):
        spoiled = tmp_path / f"spoiled-{name}-{len(damage)}"
        shutil.copytree(report, spoiled)
        (spoiled / name).write_bytes(damage)
        # every file as it was (the report's own ledger aside: it notes its staging folder came and went)
        before = {p.name: p.read_bytes() for p in spoiled.iterdir() if p.is_file() and p.name != LEDGER}
        with pytest.raises(RecordFileError, match=rf"{re.escape(str(spoiled / name))}: .*nothing was written"):
            write_report(read_runs(golden_runs / "o3d"), spoiled)
        assert {p.name: p.read_bytes() for p in spoiled.iterdir() if p.is_file() and p.name != LEDGER} == before, (
            name, damage)

    out = tmp_path / "results"
    first = _run_cli(["results", str(golden_runs / "dori"), "--out", str(out), "--iterations", "100"])
    assert first.returncode == 0, first.stderr[-800:]
    n_dori = len(read_record_file(out / "results.jsonl"))
    second = _run_cli(["results", str(golden_runs / "vague"), "--out", str(out), "--iterations", "100"])
    assert second.returncode == 0 and f"and {n_dori} kept from before" in second.stdout, second.stdout + second.stderr
    for name in ("results.jsonl", "results.csv"):
        kept = read_record_file(out / name)
        assert {r.benchmark for r in kept} == {"dori", "vague"} and len(kept) > n_dori, name
    again = _run_cli(["results", str(golden_runs / "vague"), "--out", str(out), "--iterations", "100"])
    assert again.returncode == 0 and len(read_record_file(out / "results.jsonl")) == len(kept)  # same keys: replaced
    (out / "results.jsonl").write_text("{\"model\": \"m\"}\n", encoding="utf-8")
    before = (out / "results.csv").read_bytes()
    refused = _run_cli(["results", str(golden_runs / "dori"), "--out", str(out), "--iterations", "100"])
    assert refused.returncode == 2 and "results.jsonl:1: not a result record" in refused.stderr, refused.stderr
    assert "nothing was written" in refused.stderr and (out / "results.csv").read_bytes() == before


def _empty_copy(sample: Path, tmp_path: Path, config_file: str) -> tuple[Path, Path]:
    """A copy of a bundled sample whose one parquet file keeps its schema but no rows."""
    import pyarrow.parquet as pq

    folder = tmp_path / sample.parent.name
    shutil.copytree(sample, folder)
    emptied = folder / config_file
    pq.write_table(pq.read_table(emptied).slice(0, 0), emptied)
    return folder, emptied


def test_a_parquet_file_without_rows_is_named_by_every_loader(tmp_path):
    """Issue 32, item 4: a 0-row parquet file gave datasets' bare "DatasetGenerationError"
    (SpatialTunnel, O3-D, DORI); each loader now names the file and says it has no rows."""
    import datasets

    from spatial_tasks.common.validate import SourceError
    from spatial_tasks.dori import load as dori_load
    from spatial_tasks.harness import TaskData, failure_line
    from spatial_tasks.o3d.load import O3DSource

    tasks = Path("tasks")
    folder, emptied = _empty_copy(tasks / "spatialtunnel/sample", tmp_path, "phase_variation/test-00000-of-00001.parquet")
    data = TaskData(task="spatialtunnel_phase", path=str(folder), name="phase_variation", split="test")
    with pytest.raises(Exception) as caught:  # what lmms-eval meets when it loads the task's data
        datasets.load_dataset(data.path, data.name, split=data.split)
    assert failure_line(data, caught.value).endswith(f"{emptied}: no rows (a parquet file with only its schema)")

    folder, emptied = _empty_copy(tasks / "o3d/sample", tmp_path, "kb-1cue/train-00000-of-00001.parquet")
    with pytest.raises(KeyError, match=re.escape(f"{emptied}: no rows")):
        O3DSource("emptied", path=str(folder)).subset("kb-1cue")

    (dori_file,) = (tasks / "dori/sample").glob("*.parquet")
    folder, emptied = _empty_copy(tasks / "dori/sample", tmp_path, dori_file.name)
    with pytest.raises(SourceError, match=re.escape(f"{emptied}: no rows")):
        dori_load.discover(str(folder))


def _vague_copy(tmp_path: Path, change) -> Path:
    """The bundled VAGUE GitHub-layout sample, its VCR item file changed by ``change(items)`` (which
    returns what the file then holds)."""
    folder = tmp_path / "vague"
    shutil.copytree(Path("tasks/vague/sample/github"), folder)
    (file,) = folder.glob("vcr_*.json")
    file.write_text(json.dumps(change(json.loads(file.read_text(encoding="utf-8")))), encoding="utf-8")
    return folder


def _edit(index: int, edit):
    def change(items):
        items[index] = edit(items[index])
        return items
    return change


def _meta(**fields):
    return lambda item: {**item, "meta": {**item["meta"], **fields}}


@pytest.mark.parametrize(("change", "message"), [
    (_edit(1, lambda item: "an item that is a string"), r"vcr_4_sample\.json, item 1 \(None\), key 'item': not a JSON object"),
    (_edit(2, lambda item: {k: v for k, v in item.items() if k != "mcq"}),
     r"vcr_4_sample\.json, item 2 \('0003_Sample_Office@2'\), key 'mcq': missing"),
    (lambda items: {"items": items}, r"vcr_4_sample\.json: the VAGUE items are inside an object \(key 'items'\)"),
    (_edit(0, lambda item: {**item, "solution": "(person3, move, sedan)"}),
     r"item 0 \('0001_Sample_Parking@0'\), key 'solution': the listener 'person3' has no person tag: the item has 2"),
    (_edit(0, _meta(person_bbox=[[22.0, 60.0, 560.0, 200.0]])),
     r"item 0 \('0001_Sample_Parking@0'\), key 'meta.person_bbox': box 1: .* is not inside the 320 x 240 image"),
    (_edit(0, _meta(img_size=None, person_bbox=[[22.0, 60.0, 56.0, 900.0]])),
     (r"vcr_4_sample\.json, item 0 \('0001_Sample_Parking@0'\), key 'meta.person_bbox': box 1: .* is not inside "
      r"the 320 x 240 image")),
], ids=["string item", "no mcq", "wrapped in an object", "listener without a tag", "box outside the stated size",
        "box outside the image"])
def test_one_bad_vague_item_is_named_and_never_hides_its_file(tmp_path, change, message):
    """Regression (issue 32, item 3): a string item, an item without ``mcq`` or a {"items": [...]}
    file made the whole item file be skipped with a warning, and the load went on with the other
    subset. Every such item is now refused, naming file and item; so are a listener with no tagged
    box and a person box outside its image (found before, mid-run, when the tags were drawn)."""
    from spatial_tasks.common.validate import SourceError
    from spatial_tasks.vague.load import docs_from_folder

    folder = _vague_copy(tmp_path, change)
    with pytest.raises(SourceError, match=message):
        docs_from_folder(folder)


def test_two_files_of_one_vague_subset_cannot_give_the_same_item_ids(tmp_path):
    """Issue 32, item 3: an item's id is its position in its subset's file, so two VCR files would
    give two items each id; refused, naming both."""
    from spatial_tasks.common.validate import SourceError
    from spatial_tasks.vague.load import docs_from_folder

    folder = _vague_copy(tmp_path, lambda items: items)
    (file,) = folder.glob("vcr_*.json")
    more = [{**item, "indirect": item["indirect"] + " Again."} for item in json.loads(file.read_text())]
    (folder / "vcr_more.json").write_text(json.dumps(more), encoding="utf-8")
    with pytest.raises(SourceError, match=r"vcr_more\.json, item 0: its id vcr-00000 is also .*vcr_4_sample\.json, "
                                          r"item 0: the VAGUE-VCR items must come from one file"):
        docs_from_folder(folder)
    assert len(docs_from_folder(_vague_copy(tmp_path / "again", lambda items: items))) == 8  # the sample loads


def test_a_probe_pair_under_two_indexes_is_refused(tmp_path):
    """Issue 32, item 5: the same image and question under another index was probed, and counted,
    twice; it is refused, naming both rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spatial_tasks.spatialtunnel.probe.data import ProbeDataError, load_probe_pairs

    table = pq.read_table("tasks/spatialtunnel/sample/contrastive_probing/test-00000-of-00001.parquet")
    again = table.slice(3, 1).set_column(table.schema.get_field_index("index"), "index",
                                         pa.array([10_000], table.schema.field("index").type))
    pq.write_table(pa.concat_tables([table, again]), tmp_path / "pairs.parquet")
    assert len(load_probe_pairs("tasks/spatialtunnel/sample/contrastive_probing", per_category=0).pairs) == 24
    with pytest.raises(ProbeDataError, match=r"pairs\.parquet, row 24: the same image and question as .*row 3 "
                                             r"\(another index\)"):
        load_probe_pairs(tmp_path / "pairs.parquet", per_category=0)


def test_rescore_refuses_a_protocol_the_run_did_not_use(golden_runs, capsys):
    """Issue 32, item 5: ``rescore spatialtunnel --protocol logit`` on the exact-match task printed
    figures as if the option were honoured; a protocol other than the logged one is refused, naming
    the file and question, and the text output names the protocol of each line."""
    from spatial_tasks import cli

    run = golden_runs / "spatialtunnel"
    exact = next(run.glob("*_samples_spatialtunnel_sample_phase.jsonl"))
    with pytest.raises(SystemExit) as stopped:
        cli.main(["rescore", "spatialtunnel", str(exact), "--protocol", "logit"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and f"{exact}: question 'phase-r00-c00-k00-q1' was run with protocol 'exact'" in err
    cli.main(["rescore", "spatialtunnel", str(run)])  # returns: nothing wrong
    out = capsys.readouterr().out
    assert "  spatialtunnel_sample_phase [exact]: v=" in out and "  spatialtunnel_logit_sample_phase [logit]: v=" in out


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "the file is empty"), (b"{\"model\": ", "not valid JSON"), (b"[1, 2]", "expected a JSON object, found list"),
    (b"{\"model\": 3, \"layer\": \"x\"}", "not a probe's metrics.json"),
])
def test_a_probe_folder_that_cannot_be_read_is_named(tmp_path, content, reason):
    """Issue 32, item 4: a corrupt, empty or wrongly shaped metrics.json (verify) or probe.json
    (report, recompute) gave a bare JSON decoder message or "internal error (AttributeError)"."""
    from spatial_tasks.common.errors import UserError
    from spatial_tasks.results.verify import verify
    from spatial_tasks.spatialtunnel.probe.run import recompute

    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "metrics.json").write_bytes(content)
    with pytest.raises(UserError, match=re.escape(str(folder / "metrics.json")) + ": .*" + re.escape(reason)):
        verify(read_runs(tmp_path))
    (folder / "probe.json").write_bytes(content if reason != "not a probe's metrics.json" else b"{\"model\": 3}")
    with pytest.raises(UserError, match=re.escape(str(folder / "probe.json")) + ": "):
        recompute(folder)


def test_a_tsv_line_with_more_cells_than_its_header_is_named(tmp_path):
    """datasets' CSV reader stops at such a line with a bare DatasetGenerationError; what lmms-eval
    then prints names the file and the line."""
    import datasets

    from spatial_tasks.harness import TaskData, failure_line

    table = tmp_path / "phase_variation.tsv"
    table.write_text("index\timage\tquestion\tanswer\n0\tQUJD\tq\tYes\n1\tQUJD\tq\tNo\tstray\n2\tQUJD\tq\tNo\n")
    data = TaskData(task="spatialtunnel_phase", path="csv", split="train",
                    kwargs={"data_files": {"train": str(table)}, "delimiter": "\t"})
    with pytest.raises(Exception) as caught:  # what lmms-eval meets when it loads the task's data
        datasets.load_dataset(data.path, data.name, split=data.split, cache_dir=str(tmp_path / "hf"), **data.load_kwargs())
    assert failure_line(data, caught.value).endswith(f"{table}, line 3: 5 cells where the header has 4 "
                                                     "(a stray tab or quote?)")


@pytest.mark.parametrize(("content", "reason"), [(b"index\timage\tquestion\tanswer\n", "no rows (only a header line)"),
                                                 (bytes(range(256)) * 4, "not UTF-8 text")])
def test_a_probe_tsv_that_cannot_be_read_is_named(tmp_path, content, reason):
    """Issue 32, item 4: a header-only or random-bytes TSV gave datasets' DatasetGenerationError."""
    from spatial_tasks.spatialtunnel.probe.data import ProbeDataError, load_probe_pairs

    table = tmp_path / "pairs.tsv"
    table.write_bytes(content)
    with pytest.raises(ProbeDataError, match=re.escape(f"{table}: {reason}")):
        load_probe_pairs(table)
