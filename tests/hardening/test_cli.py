"""The command line on bad input: a table of argument lists -> exit code and the ONE line on
stderr (never a traceback, unless --debug). Runs ``spatial_tasks.cli.main`` in-process with the
typer that installs, and the real console script for the first-use mistakes."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spatial_tasks import cli

CONSOLE = str(Path(sys.executable).with_name("spatial-tasks"))


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
        raise SystemExit(0)  # main returned normally
    out = capsys.readouterr()
    return exit_info.value.code or 0, out.out, out.err


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """Bad inputs a user could point a command at."""
    released = [{"model": "m", "image_family": "kb-1cue", "ques": "q", "answer": "A", "gt_position": "near",
                 "cues": ["HP"], "ques_clarity": 4}] * 50
    good = "\n".join(json.dumps(r) for r in released) + "\n"
    paths = {}
    paths["truncated_gz"] = tmp_path / "outputs.jsonl.gz"
    paths["truncated_gz"].write_bytes(gzip.compress(good.encode())[:-30])
    paths["not_gzip"] = tmp_path / "fake.jsonl.gz"
    paths["not_gzip"].write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    paths["latin1"] = tmp_path / "latin1.jsonl"
    paths["latin1"].write_bytes('{"model": "caf\u00e9"}\n'.encode("latin-1"))
    paths["not_json"] = tmp_path / "outputs.jsonl"
    paths["not_json"].write_text(json.dumps(released[0]) + "\n{oops\n")
    paths["nested"] = tmp_path / "nested.jsonl"
    paths["nested"].write_text("[" * 100_000 + "]" * 100_000 + "\n")
    paths["bad_row"] = tmp_path / "bad_row.jsonl"
    paths["bad_row"].write_text(json.dumps({**released[0], "gt_position": "maybe"}) + "\n")
    paths["dup"] = tmp_path / "run" / "20260101_120000_samples_spatialtunnel_sample_phase.jsonl"
    paths["dup"].parent.mkdir()
    record = {"benchmark": "spatialtunnel", "question_id": "img-q1", "variant": "phase", "template_id": 1,
              "answer": "No", "relation": "counter", "relation_two_way": "counter"}
    sample = {"doc_id": 3, "filtered_resps": [["Yes"]], "v": record}
    paths["dup"].write_text(json.dumps(sample) + "\n" + json.dumps(sample) + "\n")
    paths["maybe"] = tmp_path / "maybe" / "20260101_120000_samples_spatialtunnel_sample_phase.jsonl"
    paths["maybe"].parent.mkdir()
    paths["maybe"].write_text(json.dumps({**sample, "v": {**record, "answer": "Maybe"}}) + "\n")
    paths["off_grid"] = tmp_path / "offgrid" / "20260101_120000_samples_spatialtunnel_sample_phase.jsonl"
    paths["off_grid"].parent.mkdir()
    paths["off_grid"].write_text(json.dumps({**sample, "v": {**record, "grid": 8, "theta1_index": 8, "theta2_index": 0}}) + "\n")
    paths["no_record"] = tmp_path / "norec" / "20260101_120000_samples_spatialtunnel_sample_phase.jsonl"
    paths["no_record"].parent.mkdir()
    paths["no_record"].write_text(json.dumps(sample) + "\n" + json.dumps({**sample, "doc_id": 4, "v": "?"}) + "\n")
    paths["a_file"] = tmp_path / "plain.txt"
    paths["a_file"].write_text("x")
    paths["empty_dir"] = tmp_path / "empty"
    paths["empty_dir"].mkdir()
    paths["tag_image"] = Path("tasks/vague/sample/github/images/0001_Sample_Parking@0_annot.jpg").resolve()
    return paths


CASES = [
    # (case, argv with {name} placeholders for ``files``, exit code, the one stderr line)
    ("unknown command", ["no-such-command"], 2, r"^error: No such command 'no-such-command'\."),
    ("missing argument", ["rescore", "o3d"], 2, r"^error: Missing argument '(FILE|file)'\. \(see: spatial-tasks rescore o3d --help\)$"),
    ("missing option", ["publish", "x"], 2, r"^error: Missing option '--repo'"),
    ("bad integer", ["generate", "spatialtunnel", "--resolution", "banana", "--out", "/nonexistent/x"], 2,
     r"^error: Invalid value for '--resolution'"),
    ("unknown option", ["publish", "x", "--repo", "a/b", "--drry-run"], 2, r"^error: No such option: --drry-run"),
    ("bad choice", ["rescore", "o3d", "{a_file}", "--format", "xml"], 2,
     r"^error: --format must be one of auto, o3d-released, lmms-samples, not 'xml'$"),
    ("bad ddof", ["rescore", "o3d", "{a_file}", "--ddof", "3"], 2, r"^error: --ddof must be 0"),
    ("bad protocol", ["rescore", "spatialtunnel", "{a_file}", "--protocol", "banana"], 2,
     r"^error: --protocol must be one of auto, exact, logit"),
    ("unknown benchmark", ["prompts", "nope"], 2,
     r"^error: BENCHMARK must be one of spatialtunnel, o3d, dori, vague, not 'nope'$"),
    ("missing file", ["rescore", "o3d", "/nonexistent-folder"], 2, r"^error: /nonexistent-folder: no such file or folder$"),
    ("missing folder", ["rescore", "spatialtunnel", "/nonexistent-folder"], 2,
     r"^error: /nonexistent-folder: no such file or folder$"),
    ("folder without samples", ["rescore", "spatialtunnel", "{empty_dir}"], 2, r"^error: .*empty: no SpatialTunnel samples found"),
    ("truncated gzip", ["rescore", "o3d", "{truncated_gz}", "--format", "o3d-released"], 2,
     r"^error: .*outputs\.jsonl\.gz: truncated gzip file \(stopped after line \d+"),
    ("not gzip inside", ["rescore", "o3d", "{not_gzip}", "--format", "o3d-released"], 2,
     r"^error: .*fake\.jsonl\.gz: (corrupt|truncated) gzip file"),
    ("not UTF-8", ["rescore", "o3d", "{latin1}", "--format", "o3d-released"], 2,
     r"^error: .*latin1\.jsonl:1: not UTF-8 text"),
    ("not JSON", ["rescore", "o3d", "{not_json}", "--format", "o3d-released"], 2,
     r"^error: .*outputs\.jsonl:2: not a JSON object \(invalid JSON"),
    ("JSON nested too deep", ["rescore", "o3d", "{nested}", "--format", "o3d-released"], 2,
     r"^error: .*nested\.jsonl:1: JSON nested too deeply to read$"),
    ("a bad field", ["rescore", "o3d", "{bad_row}"], 2,
     r"^error: .*bad_row\.jsonl:1: field 'gt_position' must be near, far or none, got 'maybe'$"),
    ("a doc logged twice", ["rescore", "spatialtunnel", "{dup}"], 2, r"^error: .*phase\.jsonl:2: doc_id 3 is logged twice"),
    ("a record answer that is no answer", ["rescore", "spatialtunnel", "{maybe}"], 2,
     r"^error: .*phase\.jsonl:1: the logged spatialtunnel record cannot be re-scored: field 'answer': "),
    ("a record's cell off its grid", ["rescore", "spatialtunnel", "{off_grid}"], 2,
     r"^error: .*phase\.jsonl:1: the logged spatialtunnel record cannot be re-scored: theta1_index 8 is not a "
     r"position of its grid 8 \(positions 0\.\.7\)$"),
    ("a sample without its record", ["rescore", "spatialtunnel", "{no_record}"], 2,
     r"^error: .*phase\.jsonl:2: no spatialtunnel record under 'v'"),
    ("permission denied", ["report", "{empty_dir}", "--out", "/sys/spatial-tasks-report"], 2,
     r"^error: /sys/spatial-tasks-report: permission denied$"),
    ("output is a file", ["report", "{empty_dir}", "--out", "{a_file}"], 2, r"^error: --out .*plain\.txt: is a file, expected a folder$"),
    ("tiny model onto a file", ["tiny-model", "--out", "{a_file}"], 2, r"^error: --out .*plain\.txt: is a file, expected a folder$"),
    ("publish a missing folder", ["publish", "/nonexistent", "--repo", "a/b", "--dry-run"], 2,
     r"^error: /nonexistent: no such dataset folder$"),
    ("publish a bad repo id", ["publish", "{empty_dir}", "--repo", "nope"], 2, r"^error: --repo must be ORG/NAME .*got 'nope'$"),
    ("demo onto a file", ["demo", "--out", "{a_file}"], 2, r"^error: --out .*plain\.txt: is a file, expected a folder$"),
    # flags that would run for ever or exhaust memory: refused at once (issue 20)
    ("a shard count past the limit", ["generate", "spatialtunnel", "--out", "{empty_dir}/st", "--shard",
                                      "1/1000000000000"], 2, r"^error: --shard '1/1000000000000': at most 100,000 shards$"),
    ("a resolution past the limit", ["generate", "spatialtunnel", "--out", "{empty_dir}/st", "--resolution", "100000"],
     2, r"^error: --resolution must be a whole number from 16 to 8,192, got 100000$"),
    ("an O3-D resolution past the limit", ["generate", "o3d", "--out", "{empty_dir}/o", "--resolution", "100000"],
     2, r"^error: --resolution must be a whole number from 16 to 8,192, got 100000$"),
    ("a DORI count past the limit", ["generate", "dori", "--out", "{empty_dir}/d", "--count", "100000000000"],
     2, r"^error: --count must be a whole number from 1 to 10,000,000, got 100000000000$"),
    ("probe layers past any model", ["probe", "--model", "{empty_dir}", "--data", "{a_file}", "--layers",
                                     "0-1000000000", "--out", "{empty_dir}/p"], 2,
     r"^error: --layers '0-1000000000': '0-1000000000' goes past layer 1023 \(no model has that many\)$"),
    ("--rpm nan", ["generate", "vague", "--out", "{empty_dir}/v", "--scenes", "{a_file}", "--images", "{empty_dir}",
                   "--rpm", "nan"], 2, r"^error: --rpm must be a number from 1e-06 to 1e\+06, got nan$"),
    ("--timeout 0", ["generate", "vague", "--out", "{empty_dir}/v", "--scenes", "{a_file}", "--images", "{empty_dir}",
                     "--timeout", "0"], 2, r"^error: --timeout must be a number from 1 to 3600, got 0"),
    # publish --dry-run refuses what the real run refuses
    ("publish to ../x", ["publish", "{empty_dir}", "--repo", "../x", "--dry-run"], 2, r"^error: --repo '\.\./x' is not"),
    ("publish to a/b/c", ["publish", "{empty_dir}", "--repo", "a/b/c", "--dry-run"], 2, r"^error: --repo must be ORG/NAME"),
    ("publish to ''", ["publish", "{empty_dir}", "--repo", "", "--dry-run"], 2, r"^error: --repo must be ORG/NAME"),
    ("publish to an id with a newline", ["publish", "{empty_dir}", "--repo", "a/b\nc", "--dry-run"], 2,
     r"^error: --repo .*(not a valid|must be ORG/NAME)"),
    # issue 32, item 5: options checked when the command starts, naming the flag
    ("a prompt value the task cannot use", ["custom-task", "dori_sample", "--out", "{empty_dir}/c", "--prompt",
                                            "draw_boxes=sometimes"], 2,
     r"^error: --prompt: DORI: the task argument draw_boxes must be one of \('auto', 'always', 'never'\), got 'sometimes'$"),
    ("a prompt number that is text", ["custom-task", "dori_sample", "--out", "{empty_dir}/c", "--prompt", "seed=many"],
     2, r"^error: --prompt seed=many: the base task's value is 42; give an integer$"),
    ("an empty DORI --source", ["generate", "dori", "--out", "{empty_dir}/d", "--task", "canonical_orientation",
                                "--images", "{empty_dir}", "--source", ""], 2,
     r"^error: --source '': name the source dataset of --images in one line"),
    ("a DORI --images for rendered tasks", ["generate", "dori", "--out", "{empty_dir}/d", "--images", "{empty_dir}"],
     2, r"^error: --images: only --task canonical_orientation reads it"),
    ("tag size 0", ["vague", "tag-persons", "{tag_image}", "--boxes", "[[1, 1, 20, 20]]", "--out", "{empty_dir}/t.jpg",
                    "--size", "0"], 2, r"^error: --size 0: a tag's font is at least 4 px$"),
    ("tag size past the image", ["vague", "tag-persons", "{tag_image}", "--boxes", "[[1, 1, 20, 20]]", "--out",
                                 "{empty_dir}/t.jpg", "--size", "100000"], 2,
     r"^error: --size 100000: larger than the 320 x 240 image; at most 320"),
    ("tags written onto a folder", ["vague", "tag-persons", "{tag_image}", "--boxes", "[[1, 1, 20, 20]]", "--out",
                                    "{empty_dir}"], 2, r"^error: --out .*empty: a folder; give the image file to write"),
    ("a preview position that is none", ["preview", "o3d", "tasks/o3d/sample", "--out", "{empty_dir}/s.png",
                                         "--position", "middle"], 2, r"^error: --position 'middle': one of near, far"),
    ("a preview written onto a folder", ["preview", "dori", "tasks/dori/sample", "--out", "{empty_dir}"], 2,
     r"^error: --out .*empty: a folder; give the file to write"),
    # issue 32, item 10: a shard that would get no question is refused before anything is made
    ("an empty DORI shard", ["generate", "dori", "--out", "{empty_dir}/d", "--count", "1", "--shard", "2/3"], 2,
     r"^error: --shard 2/3: --count 1 gives 1 job\(s\), so shard 2 of 3 would get none; use at most 1 shard\(s\)$"),
    ("an empty SpatialTunnel shard", ["generate", "spatialtunnel", "--out", "{empty_dir}/s", "--variant", "phase",
                                      "--grid", "2", "--per-cell", "1", "--shard", "99/100"], 2,
     r"^error: --shard 99/100: --variant phase --grid 2 --per-cell 1 gives 4 job\(s\)"),
    ("verify an empty folder", ["verify", "{empty_dir}"], 2,
     r"^error: .*empty: holds no lmms-eval samples .* and no `spatial-tasks probe` folder; nothing to verify$"),
    ("a base URL that is no URL", ["generate", "vague", "--out", "{empty_dir}/v", "--scenes", "{a_file}", "--images",
                                   "{empty_dir}", "--base-url", "not a url"], 2,
     r"^error: --base-url 'not a url': not an http\(s\) URL with a host"),
]


@pytest.mark.parametrize(("case", "argv", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_errors_are_one_line(files, capsys, case, argv, code, message):
    argv = [a.format(**files) for a in argv]
    got, out, err = run_main(argv, capsys)
    assert got == code, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.search(message, lines[0]), lines[0]


def test_debug_shows_the_traceback(capsys):
    code, _, err = run_main(["--debug", "rescore", "o3d", "/nonexistent-folder"], capsys)
    assert code == 2 and "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1] == "error: /nonexistent-folder: no such file or folder"


def test_no_arguments_print_help_and_exit_0(capsys):
    code, out, err = run_main([], capsys)
    assert code == 0 and "Usage" in out and "rescore" in out and err == ""


def test_a_group_without_its_command_prints_its_help(capsys):
    code, out, err = run_main(["rescore"], capsys)
    assert code == 2 and "spatialtunnel" in out and "o3d" in out and "Traceback" not in err


def test_version(capsys):
    code, out, _ = run_main(["--version"], capsys)
    assert code == 0 and re.match(r"^spatial-tasks \d+\.\d+", out)


@pytest.mark.parametrize("argv", [[], ["no-such-command"], ["rescore"], ["rescore", "o3d"],
                                  ["generate", "spatialtunnel", "--resolution", "banana", "--out", "/nonexistent/x"],
                                  ["publish", "/nonexistent", "--repo", "a/b", "--dry-run"]])
def test_the_console_script_never_prints_a_traceback(argv):
    run = subprocess.run([CONSOLE, *argv], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in run.stdout + run.stderr
    assert run.returncode in ((0, 2) if argv in ([], ["rescore"]) else (2,))
    if run.returncode == 2 and argv != ["rescore"]:
        assert len(run.stderr.strip().splitlines()) == 1 and run.stderr.startswith("error: ")
