"""Reading lmms-eval outputs: results JSON and ``--log_samples`` JSONL files."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.jsonfile import say_replaced, writable_text


class SamplesError(UserError, ValueError):
    pass


class RunFailed(UserError, RuntimeError):
    """An lmms-eval run that did not produce results for every task it was given."""


def iter_json_lines(path: Path, error: type[ValueError] = SamplesError) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file, plain or gzip; blank lines skipped.

    Anything that stops the file from being read -- a line that is not a JSON object, a
    truncated or corrupt gzip stream, bytes that are not UTF-8, JSON nested too deep -- raises
    ``error`` naming the file and line.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, expected a JSON-lines file")
    number, replaced = 0, 0
    try:
        with open(path, "rb") as raw:  # opened once: the first two bytes say whether it is gzip
            gzipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
            for number, line in enumerate(io.TextIOWrapper(stream, encoding="utf-8"), 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise error(f"{path}:{number}: not a JSON object (invalid JSON: {err.msg})") from None
                except RecursionError:
                    raise error(f"{path}:{number}: JSON nested too deeply to read") from None
                if not isinstance(obj, dict):
                    raise error(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
                if "\\ud" in line or "\\uD" in line:  # a JSON escape of a surrogate: perhaps a lone one
                    obj, count = writable_text(obj)
                    replaced += count
                yield number, obj
    except UnicodeDecodeError as err:
        raise error(f"{path}:{number + 1}: not UTF-8 text (byte {err.object[err.start:err.start + 1]!r})") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        kind = "truncated" if isinstance(err, EOFError) else "corrupt"
        raise error(f"{path}: {kind} gzip file (stopped after line {number}: {err})") from None
    say_replaced(path, replaced)


def samples_benchmark(samples_path: Path) -> str | None:
    """The benchmark named by the first logged record (any metric key) found in a samples file;
    None when no line has one. Lines are read until one does: a first line that lost its record
    must not hide the file (``rescore_file`` then names that line)."""
    for _, sample in numbered_samples(samples_path):
        for value in sample.values():
            if isinstance(value, dict) and isinstance(value.get("benchmark"), str) and value["benchmark"]:
                return value["benchmark"]
    return None


def only_empty(empty: Sequence[Path], consequence: str) -> SamplesError:
    """The error of a command whose samples files are all empty: the first named, the rest counted."""
    more = f" (and {len(empty) - 1} more samples file(s) likewise)" if len(empty) > 1 else ""
    return SamplesError(f"{empty[0]}: empty, 0 lines{more}; {consequence}")


class SamplesFile(os.PathLike):
    """One samples file, parsed on first use and kept (a command's run set holds one per task:
    ``common.runset``): every reader gets its lines, and the error that stopped the reading if one did,
    exactly as the first reader saw them. Anywhere a samples path is taken, this may stand for it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.said_malformed = False  # its malformed values are named once (``rescore_file``)

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"SamplesFile({str(self.path)!r})"

    @cached_property
    def _parsed(self) -> tuple[list[tuple[int, dict]], BaseException | None]:
        lines: list[tuple[int, dict]] = []
        try:
            for item in _read_samples(self.path):
                lines.append(item)
        except Exception as err:  # noqa: BLE001 - kept, and raised again after the same lines to every reader
            return lines, err
        return lines, None

    def lines(self) -> Iterator[tuple[int, dict]]:
        lines, error = self._parsed
        yield from lines
        if error is not None:
            raise error


def numbered_samples(path: Path | SamplesFile) -> Iterator[tuple[int, dict]]:
    """(line number, logged sample) of one JSONL file (a ``SamplesFile``: its kept lines); a bad line,
    or a doc logged twice, raises naming the file and line(s)."""
    return path.lines() if isinstance(path, SamplesFile) else _read_samples(Path(path))


def _read_samples(path: Path) -> Iterator[tuple[int, dict]]:
    seen: dict[object, int] = {}
    for number, sample in iter_json_lines(path):
        if "doc_id" not in sample or "filtered_resps" not in sample:
            raise SamplesError(f"{path}:{number}: not an lmms-eval logged sample (needs 'doc_id' and 'filtered_resps')")
        doc_id = sample["doc_id"]
        key = json.dumps(doc_id, sort_keys=True) if isinstance(doc_id, (dict, list)) else doc_id
        if key in seen:
            raise SamplesError(f"{path}:{number}: doc_id {doc_id!r} is logged twice (also on line {seen[key]}); "
                               "a samples file holds one entry per doc -- were two runs concatenated?")
        seen[key] = number
        yield number, sample


def is_record_ref(value: object) -> bool:
    """Whether a logged value is the pointer the lmms-eval seam logs under a doc's other metric keys
    (``harness.pooling.RecordRef``: ``<BENCH record: see 'KEY'>``) instead of the record itself."""
    return isinstance(value, str) and value.startswith("<") and " record: see '" in value and value.endswith("'>")


def first_response(sample: dict) -> str:
    first = sample.get("filtered_resps")
    if first is None:
        return ""
    while isinstance(first, list):  # a list of responses, sometimes nested one level deeper
        first = first[0] if first else ""
    return first if isinstance(first, str) else str(first)


def logged_record(sample: dict, keys: Sequence[str], benchmark: str) -> dict | None:
    """Our per-doc record as logged under one of the metric ``keys`` (lmms-eval 0.7.3 does not log
    the doc), or the logged doc when present; None when the sample belongs to another benchmark."""
    for candidate in (*(sample.get(k) for k in keys), sample.get("doc")):
        if isinstance(candidate, dict) and candidate.get("benchmark") == benchmark:
            return candidate
    return None


def rescore_file(path: Path, keys: Sequence[str], benchmark: str,
                 score: Callable[[dict, dict], dict]) -> list[dict]:
    """``score(record, sample)`` for every logged sample of one samples file of ``benchmark``.

    Nothing is dropped: a file in which any sample carries a record of ``benchmark`` (under one of
    ``keys``, or as its doc) is ours, and then every sample must carry one; a sample without it (its
    first line included), or whose record cannot be re-scored (a missing field, a value out of
    range), is a SamplesError naming the file, the line and the field. A file of another benchmark
    gives []."""
    out: list[dict] = []
    lines = [(number, sample, logged_record(sample, keys, benchmark)) for number, sample in numbered_samples(path)]
    if not any(record is not None for _, _, record in lines):
        return out
    _say_malformed_values(path, lines)
    for number, sample, record in lines:
        if record is None:
            raise SamplesError(f"{path}:{number}: no {benchmark} record under {' or '.join(repr(k) for k in keys)} "
                               "(the other samples have one); every sample is counted, so the file cannot be "
                               "rescored as it is")
        try:
            out.append(score(record, sample))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            raise SamplesError(f"{path}:{number}: the logged {benchmark} record cannot be re-scored: "
                               f"{record_problem(err)}") from None
    return out


def _say_malformed_values(path: Path | SamplesFile, lines: Sequence[tuple[int, dict, dict | None]]) -> None:
    """Name the logged values that cannot be what they claim (a first-token payload's label mass
    outside [0, 1], NaN or not a number), once per ``SamplesFile`` (a command's): the file, the first doc
    id and value, and how many. Such a question is malformed: its record scores it as an unreadable
    answer (wrong)."""
    from spatial_tasks.common.yesno import label_mass_problem

    def problem_of(sample: dict, record: dict | None) -> str | None:  # the logged response, as rescored
        logged = record.get("response") if isinstance(record, dict) else None
        return label_mass_problem(logged) or label_mass_problem(first_response(sample))

    found = [(sample.get("doc_id"), problem) for _, sample, record in lines if (problem := problem_of(sample, record))]
    if not found or getattr(path, "said_malformed", False):
        return
    if isinstance(path, SamplesFile):
        path.said_malformed = True
    doc_id, problem = found[0]
    more = f" ({len(found)} questions in all)" if len(found) > 1 else ""
    print(f"spatial-tasks: {path}: doc {doc_id}: {problem}{more}; counted as malformed (scored as an unreadable "
          "answer, wrong)", file=sys.stderr, flush=True)


def record_problem(err: BaseException) -> str:
    """What is wrong with a logged record, in words (a pydantic error names its field)."""
    errors = getattr(err, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            field_name = ".".join(str(p) for p in first.get("loc", ()))
            if not field_name:  # a check across fields names them in its message
                return str(first.get("msg")).removeprefix("Value error, ")
            return f"field {field_name!r}: {first.get('msg')} (got {str(first.get('input'))[:80]!r})"
        except (IndexError, KeyError, TypeError):
            pass
    if isinstance(err, KeyError):
        return f"field {err.args[0]!r} is missing"
    return f"{type(err).__name__}: {str(err)[:200]}"


def load_results(path: Path) -> dict:
    """An lmms-eval ``*_results.json``; any reading problem names the file."""
    from spatial_tasks.common.jsonfile import read_json_object

    return read_json_object(path, "an lmms-eval results file", SamplesError)


# ------------------------------------------------------------------------------------------
# Runs: one lmms-eval invocation = one folder + one timestamp


@dataclass
class Run:
    """One lmms-eval invocation: the files it wrote into one folder under one timestamp.

    lmms-eval writes ``<output_path>/<model>/<stamp>_results.json`` and
    ``<stamp>_samples_<task>.jsonl`` per task; several runs (other models, other model_args, the
    same command twice) can share a folder, and their samples must never be scored together.
    """

    label: str
    folder: Path
    stamp: str
    results_path: Path | None = None
    samples: dict[str, Path] = field(default_factory=dict)
    _results: dict | None = field(default=None, init=False, repr=False, compare=False)

    def results(self) -> dict:
        """Its results file, read on first use (``{}`` without one)."""
        if self._results is None:
            self._results = load_results(self.results_path) if self.results_path is not None else {}
        return self._results


_STAMP = re.compile(r"^(?P<stamp>.+?)_(?:results\.json|samples_(?P<task>.+)\.jsonl)$")
LABEL_DROPS = ("device", "device_map", "min_pixels", "max_pixels", "attn_implementation", "max_num_frames",
               "batch_size", "dtype", "torch_dtype", "api_key", "base_url", "num_concurrent", "max_retries",
               "retry_backoff_s", "httpx_trust_env", "trust_remote_code")
MAX_LABEL = 48


def run_label(results: dict, fallback: str) -> str:
    """"model(arg=value, ...)" from a results file's config: the model args that tell runs apart,
    a checkpoint path shortened to its last component, the whole at most MAX_LABEL characters."""
    cfg = results.get("config") if isinstance(results.get("config"), dict) else {}
    model = str(cfg.get("model") or fallback)
    args = cfg.get("model_args") or ""
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    keep = []
    for arg in str(args).split(","):
        key, _, value = arg.partition("=")
        if not arg or key.strip() in LABEL_DROPS:
            continue
        if key.strip() == "pretrained":
            arg = f"{key}={Path(value.rstrip('/')).name or value}"
        keep.append(arg.strip())
    label = model + (f"({','.join(keep)})" if keep else "")
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def find_runs(root: Path) -> list[Run]:
    """Every lmms-eval run under ``root`` (a folder, or one samples/results file), in a stable
    order; runs with the same label get their timestamp appended, so no two share a label."""
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    if root.is_file():
        m = _STAMP.match(root.name)
        if m is None:
            raise SamplesError(f"{root}: not an lmms-eval output file (expected <stamp>_samples_<task>.jsonl "
                               "or <stamp>_results.json)")
        files = [root]
        sibling = root.with_name(f"{m['stamp']}_results.json")
        if m["task"] is not None and sibling.is_file():
            files.append(sibling)
    else:
        files = sorted([*root.rglob("*_samples_*.jsonl"), *root.rglob("*_results.json")])
    runs: dict[tuple[Path, str], Run] = {}
    for path in files:
        m = _STAMP.match(path.name)
        if m is None:
            continue
        key = (path.parent, m["stamp"])
        run = runs.setdefault(key, Run(label="", folder=path.parent, stamp=m["stamp"]))
        if m["task"] is None:
            run.results_path = path
        else:
            run.samples[m["task"]] = path
    out = sorted(runs.values(), key=lambda r: (str(r.folder), r.stamp))
    for run in out:
        run.label = run_label(run.results(), fallback=run.folder.name)
    labels = [r.label for r in out]
    for run in out:
        if labels.count(run.label) > 1:
            run.label += f" [{run.stamp}]"
    # Runs that started in the same second (parallel runs of one model): the shortest end of their
    # folders' paths that tells them apart.
    clashes: dict[str, list[Run]] = {}
    for run in out:
        clashes.setdefault(run.label, []).append(run)
    for same in (group for group in clashes.values() if len(group) > 1):
        for depth in range(1, max(len(r.folder.parts) for r in same) + 1):
            ends = ["/".join(r.folder.parts[-depth:]) for r in same]
            if len(set(ends)) == len(ends):
                break
        for run, end in zip(same, ends):
            run.label = f"{run.label[:-1]}, {end}]" if run.label.endswith("]") else f"{run.label} [{end}]"
    return out


def check_run(output_path: Path, tasks: list[str], log: Path | None = None) -> Path:
    """The results file an lmms-eval run wrote for ``tasks`` (tasks or groups) under
    ``output_path``, checked: lmms-eval exits 0 even when a task crashed (unless
    --verbosity DEBUG), so its exit code proves nothing. Raises RunFailed naming what is missing
    and where the log is."""
    where = f"; see {log}" if log is not None else ""
    found = sorted(Path(output_path).rglob("*_results.json")) if Path(output_path).is_dir() else []
    if not found:
        raise RunFailed(f"lmms-eval wrote no results under {output_path} (it exits 0 even when a task crashes){where}")
    data = load_results(found[-1])
    results = data.get("results") or {}
    missing = [t for t in tasks if t not in results]
    if missing:
        raise RunFailed(f"{found[-1]}: no results for {missing}{where}")
    counts = data.get("n-samples") or {}
    empty = [t for t in tasks if t in counts and not (counts[t] or {}).get("effective")]
    if empty:
        raise RunFailed(f"{found[-1]}: {empty} evaluated no documents{where}")
    return found[-1]
