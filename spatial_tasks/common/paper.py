"""The papers' published tables as data: ``tasks/<benchmark>/paper_results.yaml``.

Each file names the paper's models (with the Hub id they map to, where one is known, and other
names they go by) and holds the tables the task folder reproduces, one row per paper model. This
module reads and validates them; the report shows a paper row beside ours where the model
matches, and ``spatial-tasks verify`` grades the difference.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from spatial_tasks.common.errors import UserError
from spatial_tasks.paths import tasks_dir

FILE_NAME = "paper_results.yaml"


class PaperDataError(UserError, ValueError):
    """A paper_results.yaml that does not hold what this module reads."""


class PaperModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hub_id: str | None
    aliases: list[str] = Field(default_factory=list)


class PaperTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    scale: int = Field(description="1: the table prints fractions; 100: percent")
    columns: list[str]
    rows: dict[str, list[float | None]]

    @model_validator(mode="after")
    def _rows_fit(self) -> PaperTable:
        if self.scale not in (1, 100):
            raise ValueError(f"scale must be 1 or 100, not {self.scale}")
        for name, values in self.rows.items():
            if len(values) != len(self.columns):
                raise ValueError(f"row {name!r} has {len(values)} values for {len(self.columns)} columns")
        return self

    def fraction(self, model: str, column: str) -> float | None:
        """The printed cell as a fraction (percent tables divided by 100); None when not printed."""
        value = self.rows[model][self.columns.index(column)]
        return None if value is None else value / self.scale


class PaperResults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, PaperModel]
    tables: dict[str, PaperTable]

    @model_validator(mode="after")
    def _rows_are_models(self) -> PaperResults:
        for table_id, table in self.tables.items():
            unknown = sorted(set(table.rows) - set(self.models))
            if unknown:
                raise ValueError(f"{table_id}: rows {unknown} are not in models")
        return self

    def match(self, name: str) -> str | None:
        """The paper model that ``name`` (a Hub id, a local folder or a released-output model name)
        is: the normalised name (lower case, letters, digits and dots) equal to the paper's name, its
        Hub id, the Hub id without its owner or an alias; an alias ending in ``*`` is a prefix (for
        the authors' release names whose size the paper does not print)."""
        wanted = {_normal(name), _normal(Path(name).name)}
        for paper_name, model in self.models.items():
            names = [paper_name, *model.aliases] + ([model.hub_id, model.hub_id.split("/")[-1]] if model.hub_id else [])
            exact = {_normal(n) for n in names if not n.endswith("*")}
            prefixes = [_normal(n[:-1]) for n in names if n.endswith("*")]
            if wanted & exact or any(w.startswith(p) for w in wanted for p in prefixes if p):
                return paper_name
        return None


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


@cache
def paper_results(benchmark: str, folder: Path | None = None) -> PaperResults:
    """The validated tables of one benchmark's task folder (``folder``; default: this package's
    ``tasks/<benchmark>``)."""
    path = (tasks_dir() / benchmark if folder is None else Path(folder)) / FILE_NAME
    if not path.is_file():
        raise PaperDataError(f"no paper tables for {benchmark!r}: {path} does not exist")
    try:
        return PaperResults.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValidationError) as error:
        raise PaperDataError(f"{path}: {error}") from None
