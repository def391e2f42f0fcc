"""The house's floors (docs/architecture.md, "The floors"): common and the statistics, then the benchmarks (pure: no
lmms-eval, no seam), then the registry, then the aggregators and the CLI; the lmms-eval seam on top,
used only by task hooks and model classes. No import loops -- static ones (every import statement,
at module level or inside a function) nor through importlib (the registry's benchmark modules, the
CLI's command modules, the baseline rule modules)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import spatial_tasks
from spatial_tasks.benchmark import Later
from spatial_tasks.registry import benchmarks

PACKAGE = Path(spatial_tasks.__file__).parent
BENCHMARK_FOLDERS = tuple(benchmarks())  # the registry: a benchmark added there is checked here too
# Every module of these kinds, in every benchmark folder, must import neither lmms-eval nor the seam.
PURE = ("benchmark", "metrics", "records", "rescore", "schema", "report")
SHARED_PURE = ("registry", "benchmark", "report", "results.tidy", "results.verify", "results.scorecard",
               "results.hf_evaluate", "results.schema", "common.intervals", "common.runset", "common.paper",
               "metric_modules", "common.samples", "common.yesno", "common.hub")


def _pure_modules() -> list[str]:
    names = [f"spatial_tasks.{m}" for m in SHARED_PURE]
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] in BENCHMARK_FOLDERS and parts[-1] in PURE:
            names.append(".".join(("spatial_tasks", *parts)))
    return names


def test_descriptions_records_metrics_rescore_and_results_never_import_lmms_eval_or_the_seam():
    modules = _pure_modules()
    assert len(modules) > 30
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "from spatial_tasks.registry import benchmarks\n"
            "for b in benchmarks().values():\n"  # the record types the descriptions name
            "    b.record_type()\n"
            "print(sorted(m for m in sys.modules if m.startswith('spatial_tasks.harness') or m.split('.')[0] == 'lmms_eval'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


# The folders the wheel maps into the package (pyproject's package-dir): the code imports them by
# these names, so the graph must hold them too.
MAPPED = {"spatial_tasks.generators": PACKAGE.parent / "generators", "spatial_tasks.tasks": PACKAGE.parent / "tasks"}


def _module_of(path: Path) -> str:
    for name, folder in MAPPED.items():
        if path.is_relative_to(folder):
            parts = (*name.split("."), *path.relative_to(folder).with_suffix("").parts)
            break
    else:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> list[Path]:
    """Every module of the package and of the folders mapped into it."""
    return [*PACKAGE.rglob("*.py"), *(p for folder in MAPPED.values() for p in folder.rglob("*.py"))]


def import_graph() -> dict[str, set[str]]:
    """module -> the spatial_tasks modules it imports (any import statement; ``from X import Y``
    counts X.Y when that is a module), plus the importlib edges the registry makes. The generators/
    and tasks/ folders count under their mapped names (``spatial_tasks.generators.o3d.scene``)."""
    modules = {_module_of(p): p for p in _sources()}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                found = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[name] |= {m for m in found if m in modules and m != name}
    from spatial_tasks.registry import MODULES

    graph["spatial_tasks.registry"] |= set(MODULES)
    for module in MODULES:  # what a description names with Later loads on first use: an edge from it to each,
        description = importlib.import_module(module).BENCHMARK  # but its plugins, loaded by the CLI and the baseline model
        # and the demo, which runs what a ``demo`` field names
        plugins = {"commands": "spatial_tasks.cli", "baselines": "spatial_tasks.models.baseline",
                   "demo": "spatial_tasks.demo"}
        for fields, target in _laters(description):
            if target.module in modules:
                graph[next((plugins[f] for f in fields if f in plugins), module)].add(target.module)
    return graph


def _laters(value: object, fields: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Later]]:
    """Every ``Later`` inside a description (its fields, capabilities, demo, sections), with the names of
    the fields it sits in."""
    if isinstance(value, Later):
        return [(fields, value)]
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in _laters(getattr(value, f.name), (*fields, f.name))]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _laters(item, fields)]
    return []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt.endswith("__init__") or graph.get(nxt) is None:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles():
    graph = import_graph()
    # package __init__ modules hold no imports of their own modules: an edge to a package is not a loop
    packages = {_module_of(p) for p in _sources() if p.name == "__init__.py"}
    graph = {k: v - packages for k, v in graph.items()}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_only_hooks_models_and_the_seam_import_lmms_eval():
    importers = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "lmms_eval" for n in names):
                importers.append(_module_of(path))
    def allowed(module: str) -> bool:  # the seam, model classes, task hook modules
        last = module.rpartition(".")[2]
        in_benchmark = module.split(".")[1] in BENCHMARK_FOLDERS
        return module.startswith(("spatial_tasks.harness", "spatial_tasks.models.")) or (
            in_benchmark and (last == "tasks" or last.startswith("task_")))

    # prompts reads lmms-eval's task objects (catalog reads our YAMLs with harness.yaml_reader, without lmms-eval)
    assert sorted({m for m in importers if not allowed(m)}) == ["spatial_tasks.task_prompts"]


def test_shared_code_spells_out_no_benchmark_name():
    """Issue 30 asked for at most 12 (from 86); benchmarks/name_literals.py prints them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("name_literals", PACKAGE.parent / "benchmarks" / "name_literals.py")
    counter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(counter)
    assert counter.literals() == []


def test_the_name_counter_sees_a_name(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("name_literals", PACKAGE.parent / "benchmarks" / "name_literals.py")
    counter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(counter)
    (tmp_path / "shared.py").write_text('"""Docstrings may name o3d."""\nTASKS = ["dori_sample", "not_o3dx"]\n')
    (tmp_path / "vague").mkdir()
    (tmp_path / "vague" / "own.py").write_text('NAME = "vague"\n')  # a benchmark's own folder: not counted
    assert [(f.rsplit("/", 1)[-1], v) for f, _, v in counter.literals(tmp_path)] == [("shared.py", "dori_sample")]


def test_no_function_is_over_80_lines():
    """Issue 45, item 5: a function a reader cannot see whole is split (package and generators)."""
    long = []
    for root in (PACKAGE, PACKAGE.parent / "generators"):
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                    long.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                                f"({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_the_ground_floor_imports_nothing_above_it():
    """Issue 45, item 6: the statistics (common/intervals.py) and the description type (benchmark.py)
    stand on common/; no import runs back up from common/ or benchmark.py."""
    graph = import_graph()
    ground = {m for m in graph if m.startswith("spatial_tasks.common.")} | {"spatial_tasks.benchmark"}
    up = sorted(f"{m} -> {t}" for m in ground for t in graph[m]
                if t not in ground and t not in ("spatial_tasks", "spatial_tasks.common", "spatial_tasks.paths"))
    assert not up, up


def _descriptions() -> list:
    """Every registered description, and ToyBench's (the benchmark outside the tree)."""
    sys.path.insert(0, str(Path(__file__).parent / "toybench"))
    try:
        toy = importlib.import_module("toybench.benchmark").BENCHMARK
    finally:  # leave no ToyBench imported from here: tests/test_fifth_benchmark.py imports its own copy
        sys.path.remove(str(Path(__file__).parent / "toybench"))
        for name in [m for m in sys.modules if m == "toybench" or m.startswith("toybench.")]:
            del sys.modules[name]
    return [*benchmarks().values(), toy]


def test_the_description_type_carries_what_benchmarks_share():
    """Issue 45, item 2: a field of ``Benchmark`` is set by at least two benchmarks; what only one
    does is a capability it offers (``Capability``), reached by the shared layers through
    ``registry.offering``."""
    from spatial_tasks.benchmark import Benchmark, Capability

    descriptions = _descriptions()
    lonely = []
    for f in dataclasses.fields(Benchmark):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if default is dataclasses.MISSING:
            continue  # required: every benchmark has it
        setters = [d.name for d in descriptions if getattr(d, f.name) != default]
        if len(setters) < 2:
            lonely.append(f"{f.name}: set by {setters}")
    assert not lonely, lonely
    kinds = [type(c) for d in descriptions for c in d.capabilities]
    assert kinds and all(issubclass(k, Capability) for k in kinds)


def test_a_description_says_load_later_one_way():
    """Issue 45, item 2: a description names the code of its folder with ``Later``; a function it
    defines itself imports nothing in its body (no lazy-import trampolines), and no field holds a
    "module:attr" string."""
    from spatial_tasks.registry import MODULES

    found = []
    for module in MODULES:
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(node)):
                    found.append(f"{module}: {getattr(node, 'name', 'lambda')} imports in its body")
        description = importlib.import_module(module).BENCHMARK
        for f in dataclasses.fields(description):
            value = getattr(description, f.name)
            if isinstance(value, str) and ":" in value and "." in value.partition(":")[0] and " " not in value:
                found.append(f"{module}: {f.name} = {value!r} (name code with Later)")
    assert not found, found
    assert _laters(benchmarks()["o3d"])  # the walk finds them


def test_a_later_loads_calls_and_shows_what_it_names():
    import inspect as inspect_module

    from spatial_tasks.common.formatting import number

    later = Later("spatial_tasks.common.formatting:number")
    assert later.load() is number and later.module == "spatial_tasks.common.formatting"
    assert later(0.5) == number(0.5)
    assert inspect_module.signature(later) == inspect_module.signature(number)
    assert Later("spatial_tasks.common.formatting").load().number is number


def test_every_later_of_every_description_loads():
    """A ``Later`` names code that is imported only on first use, so a typo or a moved function would
    surface in a user's run: each one of every registered description is loaded here."""
    broken, laters = [], [(spec, later) for spec in benchmarks().values() for _, later in _laters(spec)]
    for spec in (s for s in benchmarks().values() if s.commands is not None):  # and those its commands name
        laters += [(spec, v) for v in vars(importlib.import_module(spec.commands.module)).values() if isinstance(v, Later)]
    assert len(laters) > 50 and sum(later.target.endswith("known_models.build:build") for _, later in laters) == 2
    for spec, later in laters:
        try:
            later.load()
        except (ImportError, AttributeError) as err:
            broken.append(f"{spec.name}: {later.target}: {type(err).__name__}: {err}")
    assert not broken, broken


def test_no_private_name_is_read_from_another_module():
    """Issue 45, item 7: a name with a leading underscore stays in its module (neither imported by
    ``from spatial_tasks... import _name`` nor read as ``module._name``)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ours: set[str] = set()  # local names bound to our modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spatial_tasks"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {alias.name}")
                    ours.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                ours |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("spatial_tasks")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id in ours:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not found, found


def _floor(module: str) -> int:
    """The floor of a module in docs/architecture.md's map, bottom (0) to top (5)."""
    parts = module.split(".")
    if module == "spatial_tasks":
        return 2  # the package's one function, metric_module (the evaluate modules' entry point)
    if module in ("spatial_tasks.benchmark", "spatial_tasks.paths") or parts[1] == "common":
        return 0  # the ground: common/, the description type, where the data files are
    if parts[1] == "tasks":
        return 5  # the task folders' hook lists: lmms-eval imports them, nothing of ours does
    if parts[1] in ("cli", "cli_helpers", "demo", "known_models") or parts[-1] == "commands" \
            or "known_models" in parts[2:3]:
        return 4  # the commands, and the known-behaviour models (they render, train and evaluate)
    if parts[1] == "generators":
        return 3  # the generators: below the commands that start them
    if parts[1] in BENCHMARK_FOLDERS and not parts[-1].startswith("task"):
        return 1  # a benchmark's own code (its loaders, parsers, metrics, records)
    return 2  # the registry, the harness seam and the task hooks, results, report, page, models


def test_every_arrow_points_down_or_sideways():
    """Issue 66, item 4: every arrow of the resolved import graph (every import statement, inside functions
    too; generators/ and tasks/ under their mapped names; the registry's Laters, attributed to whoever
    loads them) points to a module on its own floor or below (docs/architecture.md, "The floors")."""
    graph = import_graph()
    up = sorted(f"{m} ({_floor(m)}) -> {t} ({_floor(t)})" for m in graph for t in graph[m] if _floor(t) > _floor(m))
    assert not up, up
    assert sum(len(targets) for targets in graph.values()) > 600  # the whole graph, not a corner of it


def test_no_arrow_goes_up_to_the_generators_or_the_task_folders():
    """Issue 53, item 5: generators/ and tasks/ enter the graph under their mapped names; only the
    commands import a generator, a generator imports nothing above itself (no seam, no results, no
    commands), and no module of ours imports a task folder's hook list."""
    graph = import_graph()
    generators = {m for m in graph if m.startswith("spatial_tasks.generators.")}
    task_lists = {m for m in graph if m.startswith("spatial_tasks.tasks.")}
    assert len(generators) > 20 and len(task_lists) >= 4
    up = sorted(f"{m} -> {t}" for m in graph for t in graph[m]
                if (m in generators or t in generators or t in task_lists) and _floor(t) > _floor(m))
    assert not up, up
    # and the graph does see a mapped import (a generator's own helpers, the commands' generators)
    assert "spatial_tasks.generators.common.jobs" in graph["spatial_tasks.generators.dori.sampling"]
    assert "spatial_tasks.generators.o3d.generate" in graph["spatial_tasks.o3d.commands"]
