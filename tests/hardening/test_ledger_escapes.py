"""Reliability round 6, item 1 (issue 64): nothing outside ``--out`` is ever removed or replaced,
whatever a ledger line says or a link points to -- a property of the one layer every command
removes and replaces through (``common.owned.Ledger``), then each such command once through the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spatial_tasks.common.owned import LEDGER, Ledger, NotOurs, UserError, digest, owned

REPORT = "spatial-tasks report"
INSIDE = ("a.txt", "report.md", "thumbs/x.png", "thumbs/y.png", "sub/c.txt", "sub/deep/d.txt")
LINKS = ("thumbs", "sub", "sub/deep", "link.txt", "report.md")
TARGETS = ("outside/keep", "outside", "outside/victim.txt", "out/sub", "out/a.txt")


def snapshot(base: Path, skip: Path) -> dict[str, object]:
    """Every file and link under ``base`` except inside ``skip``: bytes, or ('link', target)."""
    seen: dict[str, object] = {}
    for root, dirs, files in os.walk(base):
        for name in (*files, *dirs):
            path = Path(root) / name
            if path == skip or skip in path.parents:
                continue
            if path.is_symlink():
                seen[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                seen[str(path)] = path.read_bytes()
    return seen


def line_for(base: Path, kind: int, name: str) -> bytes:
    """One crafted ledger line (kind picks which; ``name`` one of the folder's names)."""
    victim = base / "outside" / "victim.txt"
    size, sha = digest(victim)
    real = {"size": size, "sha256": sha, "by": REPORT}
    lines = [
        {"path": "../outside/victim.txt", **real},
        {"path": str(victim), **real},
        {"path": f"{name}/../../outside/victim.txt", **real},
        {"path": "link.txt", **real},  # through a link to the victim
        {"path": name, "folder": True, "by": REPORT},  # a scratch claim on whatever is there (a link?)
        {"path": "..", "folder": True, "by": REPORT},
        {"path": f"./{name}", **real},
        {"path": name, "removed": True},
        {"path": f"{name}/x.png", **real},
        {"path": "thumbs/a.png", **real},  # what outside/keep holds, as if thumbs still were ours
    ]
    if kind < len(lines):
        return (json.dumps(lines[kind]) + "\n").encode()
    return bytes((kind * 37 + i * 11) % 256 for i in range(kind % 23))  # binary, perhaps without a newline


def build(base: Path, ours: list[str], links: list[tuple[str, str]], user: list[str], lines: list[tuple[int, str]],
          edited: list[str]) -> tuple[Path, set[str]]:
    """base/outside (a victim, a kept folder; both listed with their true hashes by base's own ledger
    and keep's: another ledger vouches for them) and base/out, the command's folder: files the
    command wrote and recorded, then links the user made in their place, files the user added or
    edited, crafted lines appended to out's ledger. Returns out and the user's files."""
    (base / "outside" / "keep").mkdir(parents=True)
    (base / "outside" / "victim.txt").write_text("the victim")
    (base / "outside" / "keep" / "a.png").write_bytes(b"kept png")
    (base / "outside" / "keep" / "x.png").write_bytes(b"kept x")
    Ledger(base, REPORT).record(base / "outside")
    Ledger(base / "outside" / "keep", REPORT).record(base / "outside" / "keep")
    out = base / "out"
    out.mkdir()
    ledger = Ledger(out, REPORT)
    for rel in ours:
        path = out / rel
        if not any(p.is_symlink() or p.is_file() for p in [*path.parents, path] if out in p.parents):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"ours: {rel}")
            ledger.record(path)
    for rel, target in links:
        path = out / rel
        if any(p.is_symlink() or p.is_file() for p in path.parents if out in p.parents) or path.is_symlink():
            continue
        if path.exists():  # the user moves our folder or file away and links to elsewhere in its place
            moved = base / "outside" / f"moved-{rel.replace('/', '-')}"
            if not moved.exists():
                shutil.move(path, moved)
            else:
                continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(base / target)
    mine: set[str] = set()
    for rel in [*user, *edited]:
        path = out / rel
        if any(p.is_symlink() for p in [*path.parents, path] if out in p.parents) or path.is_dir():
            continue
        if any(p.is_file() for p in path.parents if out in p.parents):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"the user's {rel}")
        mine.add(str(path))
    with open(out / LEDGER, "ab") as handle:
        for kind, name in lines:
            handle.write(line_for(base, kind, name))
    return out, mine


OPS = st.sampled_from(["remove", "check", "replace", "record", "report", "scratch", "compact"])
CANDIDATES = st.sampled_from([*INSIDE, *LINKS, "..", "../outside/victim.txt", "thumbs/../../outside/keep/a.png",
                              "sub/deep", "thumbs/a.png", "", "link.txt/.."])


@st.composite
def trees(draw):
    return dict(
        ours=draw(st.lists(st.sampled_from(INSIDE), max_size=6, unique=True)),
        links=draw(st.lists(st.tuples(st.sampled_from(LINKS), st.sampled_from(TARGETS)), max_size=3)),
        user=draw(st.lists(st.sampled_from([*INSIDE, "notes.md", "sub/mine.txt"]), max_size=3)),
        edited=draw(st.lists(st.sampled_from(INSIDE), max_size=2)),
        lines=draw(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(INSIDE + LINKS)), max_size=6)),
        ops=draw(st.lists(st.tuples(OPS, st.lists(CANDIDATES, min_size=1, max_size=3)), min_size=1, max_size=5)),
    )


def apply(out: Path, op: str, names: list[str], mine: set[str]) -> None:
    ledger = Ledger(out, REPORT)
    paths = [out / name for name in names]
    try:
        if op == "remove":
            ledger.remove(*paths)
        elif op == "check":
            ledger.check(paths)
        elif op == "replace":
            staged = Path(tempfile.mkdtemp(prefix=".report-", dir=out)) / "new.txt"
            staged.write_text("new")
            ledger.replace(staged, paths[0])
        elif op == "record":  # as a command does after writing a file itself (never a user's)
            ledger.record(*(p for p in paths if not any(m == os.path.abspath(p) or m.startswith(
                os.path.abspath(p) + "/") for m in mine)))
        elif op == "report":  # the report's own flow: drop what the earlier report wrote
            stale = [path for path, by in ledger.listed_with_writer() if by == REPORT]
            ledger.check(stale)
            ledger.remove(*stale)
        elif op == "scratch":
            ledger.remove_leftover_scratch("")
        else:
            ledger.compact()
    except (NotOurs, UserError):
        pass  # refused, named: the assertion below is what matters


PINNED = dict(ours=["thumbs/x.png", "thumbs/y.png", "report.md"], links=[("thumbs", "outside/keep")], user=[],
              edited=[], lines=[(0, "a.txt"), (1, "a.txt"), (9, "thumbs")], ops=[("report", ["a.txt"])])


@pytest.mark.fuzz
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
@example(PINNED)  # the two cases: a linked thumbs/ and ledger lines naming the victim
@example({**PINNED, "links": [], "lines": [(0, "a.txt"), (3, "a.txt")],
          "ops": [("report", ["a.txt"]), ("compact", ["a.txt"])]})
def test_no_file_outside_the_folder_nor_the_users_ever_changes(tree):
    with tempfile.TemporaryDirectory() as temporary:
        base = Path(temporary)
        out, mine = build(base, tree["ours"], tree["links"], tree["user"], tree["lines"], tree["edited"])
        outside = snapshot(base, skip=out)
        users = {path: Path(path).read_bytes() for path in mine}
        links = {str(p): os.readlink(p) for p in out.rglob("*") if p.is_symlink()}
        for op, names in tree["ops"]:
            apply(out, op, names, mine)
        after = snapshot(base, skip=out)
        outside_now = {k: v for k, v in after.items() if not Path(k).name.startswith(LEDGER)}
        assert outside_now == {k: v for k, v in outside.items() if not Path(k).name.startswith(LEDGER)}
        assert {path: Path(path).read_bytes() for path in mine} == users
        assert {str(p): os.readlink(p) for p in out.rglob("*") if p.is_symlink() and str(p) in links} == links
        assert all(os.path.lexists(p) for p in links)


def test_a_ledger_line_outside_the_folder_is_named_and_ignored(tmp_path, capsys):
    base = tmp_path
    out, _ = build(base, ["a.txt"], [], [], [(0, "a.txt"), (12, "a.txt")], [])
    ledger = Ledger(out, REPORT)
    assert [p.name for p, _ in ledger.listed_with_writer()] == ["a.txt"]
    err = capsys.readouterr().err
    assert f"spatial-tasks: {out / LEDGER}:2: ../outside/victim.txt lies outside {out}; ignored" in err, err
    assert f"{out / LEDGER}:3: not a ledger line (not UTF-8 JSON); ignored" in err, err
    assert owned(base / "outside" / "victim.txt")  # the ledger above vouches for it there...
    try:
        ledger.remove(out / ".." / "outside" / "victim.txt")
    except NotOurs as refused:  # ...but it lies outside the folder this command was given
        assert str(refused).startswith(f"{REPORT}: {out / '..' / 'outside' / 'victim.txt'} lies outside {out}")
    else:
        raise AssertionError("removed a file outside the folder")
    assert (base / "outside" / "victim.txt").exists()


def test_a_path_through_a_link_is_refused_naming_the_link(tmp_path):
    out, _ = build(tmp_path, ["thumbs/x.png"], [("thumbs", "outside/keep")], [], [], [])
    ledger = Ledger(out, REPORT)
    try:
        ledger.remove(out / "thumbs" / "x.png")
    except NotOurs as refused:
        assert str(refused).startswith(f"{REPORT}: {out / 'thumbs'} is a link (to {tmp_path / 'outside' / 'keep'}); "
                                       "spatial-tasks never removes or replaces anything through a link"), refused
    else:
        raise AssertionError("removed through a link")
    assert (tmp_path / "outside" / "keep" / "x.png").read_bytes() == b"kept x"


def test_the_ledger_is_compacted_and_a_broken_line_never_swallows_ours(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / LEDGER).write_bytes(os.urandom(300).replace(b"\n", b""))  # random bytes, no newline at the end
    ledger = Ledger(out, REPORT)
    for round_ in range(100):  # a hundred rewrites of the same two files
        for name in ("a.txt", "b.txt"):
            if (out / name).exists():
                ledger.remove(out / name)
            (out / name).write_text(f"{name} {round_}")
            ledger.record(out / name)
        ledger.compact()
    lines = (out / LEDGER).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(json.loads(line)["path"] in ("a.txt", "b.txt") for line in lines)
    assert owned(out / "a.txt") and owned(out / "b.txt")
