"""How many benchmark names the shared code still spells out: string literals (docstrings left out)
in ``spatial_tasks/`` outside each benchmark's own folder and the registry, that equal a registered
benchmark's name or contain one as a word (``"o3d"``, ``"dori_sample"``, ``"tasks/vague/..."``).
Task YAMLs and tests are not counted. Issue 30's bar: at most 12 (86 before the benchmarks became
one unit each).

    .venv/bin/python benchmarks/name_literals.py          # the count, then each literal with its place
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "spatial_tasks"


def literals(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, literal) of every benchmark-name literal in shared code."""
    from spatial_tasks.registry import benchmarks

    names = sorted({b.name for b in benchmarks().values()} | {b.name.split("_")[0] for b in benchmarks().values()})
    word = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![a-z0-9])")
    own = {b.name.split("_")[0] for b in benchmarks().values()}  # each benchmark's folder
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in own or path.name == "registry.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if word.search(node.value):
                    found.append((str(path.relative_to(root.parent)), node.lineno, node.value))
    return found


def main() -> None:
    sys.path.insert(0, str(ROOT.parent))
    found = literals()
    print(f"{len(found)} benchmark-name literals in shared code (spatial_tasks/ outside the benchmarks' folders "
          "and registry.py)")
    for file, line, value in found:
        print(f"  {file}:{line}: {value[:80]!r}")


if __name__ == "__main__":
    main()
