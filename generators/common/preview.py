"""A contact sheet of a dataset folder as a model sees it: the first questions' images (after the
task's own drawing: DORI's boxes, VAGUE's person tags), each titled with its id -- for checking a
generated or downloaded folder by eye.

    spatial-tasks preview spatialtunnel|dori|vague DIR --out sheet.png [--count 9] [--size 200]

A folder whose generation run was interrupted is previewed as far as it goes, and says so.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from spatial_tasks.common.errors import UserError
from spatial_tasks.common.owned import Ledger

# A benchmark's reader: a dataset folder -> [(doc, the task's doc_to_visual)], first questions first.
# Each benchmark hands its own to ``doc_sheet`` (its commands module: ``spatial_tasks.cli_helpers.doc_preview``).
DocReader = Callable[[Path], list[tuple[dict, Callable]]]


def unfinished_note(folder: Path, work_dir: str = "_work") -> str | None:
    """A sentence when the generation run in ``folder`` did not finish: work files but no card,
    or work files newer than the card (the card is written last)."""
    work = Path(folder) / work_dir
    if not work.is_dir():
        return None
    newest = max((p.stat().st_mtime for p in work.rglob("*") if p.is_file()), default=None)
    card = Path(folder) / "README.md"
    if newest is None:
        return None
    if not card.is_file() or newest > card.stat().st_mtime + 1:
        return (f"{folder}: the generation run here is unfinished (interrupted?): {work_dir}/ holds work newer than "
                "the dataset card; rerun the same `spatial-tasks generate` command to finish it")
    return None


SHEET_FORMATS = (".png", ".jpg", ".jpeg", ".pdf", ".svg")


def check_sheet(out: Path, size: int) -> None:
    """The flags every preview takes, checked before any image is read: ``--out`` a file of a
    format matplotlib writes, ``--size`` a panel side from 32 to 4,096 px."""
    out = Path(out)
    if out.is_dir():
        raise UserError(f"--out {out}: a folder; give the file to write (e.g. {out / 'sheet.png'})")
    if out.suffix.lower() not in SHEET_FORMATS:
        raise UserError(f"--out {out}: {out.suffix or 'no suffix'}; a sheet is written as {', '.join(SHEET_FORMATS)}")
    if not 32 <= size <= 4096:
        raise UserError(f"--size {size}: a panel side from 32 to 4096 pixels")
    _sheet_ledger(out).check([out], what_to_do="Choose another --out, or move it away.")


def _sheet_ledger(out: Path) -> Ledger:
    """A sheet replaces only a sheet the previews wrote (its folder's ledger, ``common.owned``)."""
    return Ledger(Path(out).parent, "spatial-tasks preview")


def doc_sheet(benchmark: str, folder: Path, out: Path, *, read: DocReader, count: int = 9, size: int = 200,
              warn: Callable[[str], None] = print) -> Path:
    """Write the sheet (PNG) of the first ``count`` questions of ``folder`` (read by the benchmark's
    ``read``) to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    check_sheet(out, size)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such dataset folder")
    if not 1 <= count <= 100:
        raise UserError(f"--count must be a whole number from 1 to 100, got {count}")
    note = unfinished_note(folder)
    if note:
        warn(f"warning: {note}")
    docs = read(folder)[:count]
    if not docs:
        raise UserError(f"{folder}: no {benchmark} questions to preview" + (f" ({note})" if note else ""))
    columns = min(3, len(docs))
    rows = -(-len(docs) // columns)
    inch = size / 100
    fig, axes = plt.subplots(rows, columns, figsize=(columns * inch, rows * (inch + 0.5)), dpi=100, squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, (doc, visual) in zip(axes.flat, docs):
        image = visual(doc)[0].convert("RGB")
        image.thumbnail((size, size))
        ax.imshow(image)
        label = str(doc.get("question_id") or doc.get("item_id") or "")
        ax.set_title("\n".join(textwrap.wrap(label, 28)[:2]), fontsize=7)
    fig.suptitle(f"{benchmark}: the first {len(docs)} question(s) of {folder.name}" + (" (unfinished run)" if note
                                                                                    else ""), fontsize=9)
    return save_sheet(fig, out)


def save_sheet(fig, out: Path) -> Path:
    """Lay out, write and close a contact sheet (every preview ends here)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    _sheet_ledger(out).record(out)
    return out
