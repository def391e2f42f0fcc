"""What a newcomer reads holds: the README stays short (issue 53, item 4) and every relative link and
every file the README and docs/ name exists -- a renamed module breaks this test, not a reader's
afternoon."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
# A name in backquotes is a file of ours when it starts at one of these folders (repository root or
# the package) or is a bare file name of these kinds.
ROOTS = {"spatial_tasks", "tasks", "generators", "tests", "benchmarks", ".ci", "docs", "common", "results",
         "models", "harness", "page", "o3d", "dori", "vague", "spatialtunnel", "resplit", "probe",
         "metric_modules"}
SOURCE = (".py", ".yaml", ".jinja", ".toml", ".lock", ".sh")
# Names of files a command writes (in the user's folders), not files of the repository.
WRITTEN = {"report.md", "leaderboard.json", "results.jsonl", "index.html", "provenance.json", "dataset.json",
           "settings.json", "sdgm.png"}


@cache
def _repository_files() -> tuple[str, ...]:
    """Every file and folder of the work tree, relative to it; the skipped folders are not walked
    (.venv alone is ~100,000 files: walking it cost each test worker 6 s at collection)."""
    skip = {".venv", "build", ".git", "__pycache__", ".uv", "node_modules"}
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in skip]
        here = Path(folder).relative_to(ROOT)
        found += [(here / name).as_posix() for name in (*subfolders, *files) if name not in skip]
    return tuple(found)


def _exists(name: str) -> bool:
    """A repository path, or the tail of one (``resplit/tasks.py``, ``packed.py``)."""
    name = name.rstrip("/")
    return any(f == name or f.endswith("/" + name) for f in _repository_files())


def _named_files(text: str) -> list[str]:
    inline = "\n".join(line for line in text.splitlines() if not line.startswith("    "))  # not the command blocks
    named = []
    for token in CODE.findall(inline):
        token = token.strip().split("::")[0].split(":")[0] if token.endswith(".py") or "::" in token else token.strip()
        if not re.fullmatch(r"[\w.\-/]+", token) or token in WRITTEN or token.startswith(("-", ".venv")):
            continue
        first = token.split("/")[0]
        if ("/" in token and first in ROOTS) or ("/" not in token and token.endswith(SOURCE)):
            named.append(token)
    return named


def test_the_readme_is_read_in_ten_minutes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert readme.index("    bash .ci/setup && ") < readme.index("## With a GPU")  # the commands near the top
    for benchmark in ("spatialtunnel", "o3d", "dori", "vague"):
        assert f"(tasks/{benchmark}/README.md)" in readme  # each benchmark keeps its own page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_named_file_exists(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (page.parent / target.split("#")[0]).exists():
            broken.append(f"link {target}")
    broken += [f"file {name}" for name in _named_files(text) if not _exists(name)]
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_checker_sees_a_missing_file_and_a_broken_link(tmp_path):
    text = "See `spatial_tasks/o3d/task_metrics.py`, `packed.py`, `demo-out/report/index.html` and [x](nowhere.md)."
    assert _named_files(text) == ["spatial_tasks/o3d/task_metrics.py", "packed.py"]
    assert [_exists(n) for n in _named_files(text)] == [False, True]
    assert LINK.findall(text) == ["nowhere.md"]


def test_every_docs_page_is_reachable_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {target for target in LINK.findall(readme)}
    assert {f"docs/{p.name}" for p in PAGES[1:]} <= linked


def test_the_families_table_names_the_scorers_the_model_table_registers():
    """Issue 66, item 2: docs/model-families.md's table says which --model ids score each family; it is
    checked against the one registration (``models.model_table``, printed by ``spatial-tasks list --models``)."""
    from spatial_tasks.models.family_table import FAMILY_TABLE
    from spatial_tasks.models.model_table import MODEL_TABLE

    rows = {}
    for line in (ROOT / "docs" / "model-families.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        named = re.fullmatch(r".*\(`(\w+)`\)", cells[0]) if len(cells) > 2 else None
        if named and named.group(1) in FAMILY_TABLE:
            rows[named.group(1)] = set(re.findall(r"`(\w+)`", cells[1]))
    assert set(rows) == set(FAMILY_TABLE)
    for model_type, scorers in rows.items():
        assert scorers == {e.id for e in MODEL_TABLE.values() if model_type in e.served()}, model_type


def _prose_paragraphs(text: str) -> list[list[str]]:
    """A page's prose paragraphs and list items (code blocks, indented blocks and tables left out)."""
    out, current, code = [], [], False
    for line in [*text.splitlines(), ""]:
        if line.startswith("```"):
            code = not code
        starts_item = re.match(r"\s*([-*]|\d+\.)\s", line) is not None
        if code or line.startswith(("```", "|")) or not line.strip() or \
                (line.startswith("    ") and not current) or (starts_item and current):
            if current:
                out.append(current)
            current = [line] if starts_item and not code and line.strip() else []
            continue
        current.append(line)
    return out


def test_no_docs_paragraph_is_over_twelve_lines():
    """Issue 66, item 5: the docs are reference; a paragraph longer than 12 lines is split (or moved to the
    CHANGELOG, where the history lives)."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "tasks").glob("*/README.md")), *sorted((ROOT / "generators").glob("*/README.md"))]
    assert len(pages) > 15
    long = [f"{page.relative_to(ROOT)}: {len(p)} lines from {p[0][:40]!r}" for page in pages
            for p in _prose_paragraphs(page.read_text(encoding="utf-8")) if len(p) > 12]
    assert not long, long
    assert [len(p) for p in _prose_paragraphs("a\nb\n\n- c\n  d\n- e\n\n    code\n    code\n\nf")] == [2, 2, 1, 1]


def test_every_module_is_named_in_the_layout_map():
    """Issue 66, item 5: docs/architecture.md names every module of the package and the generators."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [p for folder in ("spatial_tasks", "generators") for p in sorted((ROOT / folder).rglob("*.py"))
               if p.name != "__init__.py"]
    assert len(modules) > 150
    unnamed = [str(p.relative_to(ROOT)) for p in modules if not re.search(rf"(?<!\w){re.escape(p.stem)}(?!\w)", page)]
    assert not unnamed, unnamed
