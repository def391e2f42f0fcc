"""Each run is read once per command (issue 53, item 3), as a value handed to every consumer (issue 66,
item 1): ``report``, ``verify``, ``results`` and ``rescore`` parse every samples file once, and every
consumer gets the same records -- an added benchmark too, without writing anything for it."""

from __future__ import annotations

import builtins
import dataclasses
import gzip
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from spatial_tasks.common.runset import RunSet
from spatial_tasks.common.samples import SamplesError, SamplesFile, numbered_samples
from spatial_tasks.registry import benchmarks, read_runs


@pytest.fixture
def opens(monkeypatch) -> Counter:
    """How often each samples file is opened, by any of Python's openers."""
    counted: Counter = Counter()

    def counting(opener):
        def open_(file, *args, **kwargs):
            if isinstance(file, (str, Path)) and "_samples_" in Path(file).name:
                counted[Path(file).name] += 1
            return opener(file, *args, **kwargs)
        return open_

    for module, name in ((builtins, "open"), (io, "open"), (gzip, "open")):
        monkeypatch.setattr(module, name, counting(getattr(module, name)))
    return counted


def _samples_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*_samples_*.jsonl"))


def test_the_report_opens_each_samples_file_at_most_twice(page_runs, tmp_path, opens):
    from spatial_tasks.report import write_report

    write_report(read_runs(page_runs), tmp_path / "report")
    files = _samples_files(page_runs)
    assert len(files) >= 8 and set(opens) == set(files)  # every file was read...
    assert max(opens.values()) <= 2, opens.most_common(3)  # ...once (a fingerprint may look again)


@pytest.mark.parametrize("command", ["verify", "results"])
def test_verify_and_results_open_each_samples_file_at_most_twice(page_runs, opens, command, capsys, tmp_path):
    from spatial_tasks.cli import main

    try:
        main([command, str(page_runs), *(["--out", str(tmp_path / "results")] if command == "results" else [])])
    except SystemExit as exit:  # verify: 1 when a baseline's figure is far from the paper's
        assert exit.code in (0, 1), capsys.readouterr().err
    capsys.readouterr()
    assert set(opens) == set(_samples_files(page_runs)) and max(opens.values()) <= 2, opens.most_common(3)


def test_rescore_opens_each_samples_file_at_most_twice(page_runs, opens, capsys):
    from spatial_tasks.cli import main

    for name in benchmarks():
        folder = page_runs / name
        if folder.is_dir():
            opens.clear()
            main(["rescore", name, str(folder), "--json"])
            assert max(opens.values()) <= 2, (name, opens.most_common(3))
    capsys.readouterr()


def test_every_consumer_gets_the_same_records_each_made_once(page_runs, tmp_path):
    """The records of a file are made once per run set, for every consumer, by a benchmark that does
    nothing for it (a stand-in for an added one: DORI's description with a counting, undecorated
    records_from_samples); a run set read again reads the file again."""
    from spatial_tasks.report import write_report
    from spatial_tasks.results.tidy import collect
    from spatial_tasks.results.verify import verify

    dori = benchmarks()["dori"]
    made: Counter = Counter()

    def counted(path, **options):
        made[Path(path).name] += 1
        return dori.records_from_samples(path, **options)

    known = {**benchmarks(), "dori": dataclasses.replace(dori, records_from_samples=counted)}
    runs = RunSet.read([page_runs / "dori"], known)
    (first, *_) = runs.ours()
    assert first.records() == first.records() and first.records() is not first.records()
    assert all(a is b for a, b in zip(first.records(), first.records()))  # the same records, a new list each time
    collect(runs)
    verify(runs)
    write_report(runs, tmp_path / "report")
    files = _samples_files(page_runs / "dori")
    assert files and made == Counter(dict.fromkeys(files, 1)), made
    RunSet.read([page_runs / "dori"], known).ours()[0].records()
    assert made[first.path.name] == 2  # another command's run set: read again


def test_a_bad_line_is_reported_the_same_to_every_reader(tmp_path):
    path = tmp_path / "x_samples_t.jsonl"
    good = json.dumps({"doc_id": 0, "filtered_resps": ["a"]})
    path.write_text(f"{good}\nnot json\n", encoding="utf-8")
    file = SamplesFile(path)
    for _ in range(2):
        seen = []
        with pytest.raises(SamplesError, match=r"x_samples_t\.jsonl:2: not a JSON object"):
            for number, _sample in numbered_samples(file):
                seen.append(number)
        assert seen == [1]  # the lines before the bad one, as an unread file gives them
    path.write_text(f"{good}\n", encoding="utf-8")
    assert [n for n, _ in numbered_samples(path)] == [1]  # a path, not the kept file: read as it is now
