"""``spatial-tasks probe``: contrastive probing of a VLM's hidden states (SpatialTunnel paper §5).

For every pair (``probe.data``) the model reads the question and its object-swapped twin; the
last prompt token's hidden state at every decoder layer gives δ = h(swapped) − h(original).

The output folder is the record of the run, and a run can stop at any point:

* ``probe.json``   what was probed (model, data, pairs' fingerprint, layers, hidden size);
* ``deltas.npy``   float32 (layers, pairs, hidden) -- every decoder layer, or ``--layers`` --,
                   a memory-mapped array written batch by batch:
                   RAM holds one batch, never all layers x pairs;
* ``pairs.jsonl``  one line per finished pair (row, id, answer, questions, the model's first
                   tokens), appended after its deltas are flushed -- the resume point;
* ``metrics.json`` / ``metrics.csv``  Coh_H/V/D, VD-EI (Eq. 3) and the code's VD-EI per layer,
                   the chosen layer and why, the paper's Table 5 row when the model is one of its;
* ``coherence.png`` and ``pca_layer<L>.png``.

Running again with the same model and data finishes what is missing; metrics and figures are
recomputed from the saved deltas without the model (``recompute``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from spatial_tasks.common import images
from spatial_tasks.common.errors import UserError
from spatial_tasks.common.owned import Ledger
from spatial_tasks.paths import output_folder
from spatial_tasks.spatialtunnel.probe import metrics as probing
from spatial_tasks.spatialtunnel.probe.data import TEMPLATES, ProbeData, ProbePair

META = "probe.json"
DELTAS = "deltas.npy"
PAIRS = "pairs.jsonl"
METRICS = "metrics.json"
METRICS_CSV = "metrics.csv"
FILES = (META, DELTAS, PAIRS, METRICS, METRICS_CSV)
PROBE = "spatial-tasks probe"  # the writer in a probe folder's ledger


class ProbeError(UserError, RuntimeError):
    """A probe folder that cannot be resumed or read; the message says which file and why."""


@dataclass
class ProbeSummary:
    out: Path
    done: int
    total: int
    layer: int | None  # None: no layer qualifies (probing.choose_layer) and none was named
    why: str
    metrics: dict
    files: list[Path]

    def describe(self) -> list[str]:
        """What ``spatial-tasks probe`` prints: pairs done, the layer and its figures, the files."""
        at = self.metrics["at_layer"]
        zero = self.metrics.get("zero_deltas") or 0
        zeros = f" ({zero} zero delta(s): identical prompts, cosine 0)" if zero else ""
        if at is None:
            lines = [f"{self.done}/{self.total} pairs probed; {self.why}{zeros}"]
        else:
            lines = [f"{self.done}/{self.total} pairs probed; layer {self.layer} ({self.why}): "
                     + ", ".join(f"{k} {v:.3f}" for k, v in at.items() if k != "zero_deltas") + zeros]
        if self.metrics["paper_table5"]:
            lines.append("paper (Table 5): " + ", ".join(f"{k} {v:.3f}" for k, v in self.metrics["paper_table5"].items()))
        return lines + [str(path) for path in self.files]


def fingerprint(pairs: Sequence[ProbePair]) -> str:
    """What makes two runs the same data: ids, answers, objects and image bytes, in order."""
    digest = hashlib.sha256()
    for pair in pairs:
        for part in (pair.pair_id, pair.label, pair.query, pair.reference):
            digest.update(part.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(pair.image).digest())
    return digest.hexdigest()


# What a probe.json must hold for a probe to resume or be recomputed (the rest is description).
_META_FIELDS = {"model": str, "data": str, "pairs": int, "num_layers": int, "hidden_size": int}


def _read_meta(out: Path) -> dict | None:
    from spatial_tasks.common.jsonfile import read_json_object

    path = out / META
    if not path.is_file():
        return None
    meta = read_json_object(path, f"a probe's {META}", ProbeError)
    for field, kind in _META_FIELDS.items():
        if not isinstance(meta.get(field), kind) or isinstance(meta.get(field), bool):
            raise ProbeError(f"{path}: {field}: expected {kind.__name__}, found {meta.get(field)!r}; the file is "
                             "damaged: remove the folder or rerun with --overwrite")
    layers = meta.get("layers")
    if layers is not None and not (isinstance(layers, list) and all(type(i) is int and i >= 0 for i in layers)):
        raise ProbeError(f"{path}: layers: expected a list of layer numbers, found {reprlib.repr(layers)}; "
                         "remove the folder or rerun with --overwrite")
    return meta


def done_rows(out: Path) -> dict[int, dict]:
    """The finished pairs of ``out`` by row. A last line cut off by a crash is dropped (its pair is
    redone); any other bad line is an error naming it."""
    path = out / PAIRS
    if not path.is_file():
        return {}
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    if lines and lines[-1]:  # no final newline: the last write was interrupted
        path.write_bytes(b"\n".join(lines[:-1]) + (b"\n" if len(lines) > 1 else b""))
    records: dict[int, dict] = {}
    for number, line in enumerate(lines[:-1], start=1):
        try:
            record = json.loads(line)
            records[int(record["row"])] = record
        except (ValueError, KeyError, TypeError, RecursionError):
            raise ProbeError(f"{path}, line {number}: not a pair record; remove the folder or use --overwrite") from None
    return records


MAX_LAYERS = 1024


def parse_layers(text: str | None) -> list[int] | None:
    """``--layers``: comma-separated 0-based layer indices and ranges ("20-28,30"); None: all."""
    if text is None or not text.strip():
        return None
    layers: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"--layers {text!r}: {part.strip()!r} is not a layer index or a range such as 20-28") from None
        if first < 0 or last < first:
            raise ValueError(f"--layers {text!r}: {part.strip()!r} is not an increasing range of indices >= 0")
        if last >= MAX_LAYERS:  # checked against the model once it is loaded; this bounds the set first
            raise ValueError(f"--layers {text!r}: {part.strip()!r} goes past layer {MAX_LAYERS - 1} (no model has that many)")
        layers.update(range(first, last + 1))
    return sorted(layers)


def run_probe(load_model: Callable[[], object], data: ProbeData, out: Path, *, model_name: str,
              batch_size: int = 8, overwrite: bool = False, layers: list[int] | None = None,
              layer: int | None = None) -> ProbeSummary:
    """Probe every pair of ``data`` not yet done in ``out`` (``load_model`` is called only when
    something is left to do), at ``layers`` (0-based decoder layers; None: all), then write
    metrics and figures (at ``layer`` when given, else the chosen one)."""
    if batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {batch_size}")
    out = output_folder(out)
    pairs = data.pairs
    meta = _read_meta(out)
    wanted = {"model": model_name, "data": data.source, "layout": data.layout, "pairs": len(pairs),
              "fingerprint": fingerprint(pairs)}
    ledger = Ledger(out, PROBE)
    if meta is not None and overwrite:  # only the probe's own files, proven by the folder's ledger
        ledger.remove(*(out / name for name in (*FILES, *(p.name for p in out.glob("pca_layer*.png")), "coherence.png")),
                      what_to_do="Move them away, or use another --out.")
        meta = None
    if meta is not None:
        what = {"model": "model", "pairs": "number of pairs", "fingerprint": "pairs (ids, answers, objects or images)"}
        differs = [what[key] for key in what if meta.get(key) != wanted[key]]
        if layers is not None and _layers(meta) != layers:
            differs.append(f"set of layers (it holds {_layers(meta)})")
        if differs:
            raise ProbeError(f"{out / META}: this folder holds a probe with another {' and other '.join(differs)} "
                             f"(it probed {meta.get('model')!r} on {meta.get('pairs')} pairs of {meta.get('data')!r}); "
                             "use another --out, or --overwrite to replace it")
    done = done_rows(out)
    todo = [row for row in range(len(pairs)) if row not in done]
    model = None
    if todo:
        model = load_model()
        if meta is None:
            chosen = list(range(model.num_layers)) if layers is None else layers
            bad = [i for i in chosen if i >= model.num_layers]
            if bad:
                raise ValueError(f"--layers {bad}: {model_name} has decoder layers 0..{model.num_layers - 1}")
        else:
            chosen = _layers(meta)
        shape = (len(chosen), len(pairs), model.hidden_size)
        if meta is None:
            meta = {**wanted, "num_layers": model.num_layers, "layers": chosen, "hidden_size": shape[2],
                    "templates": TEMPLATES,
                    "layer_numbering": "0-based decoder layers (output of layers[i]), as the authors' hooks"}
            ledger.check([out / name for name in FILES], what_to_do="Move them away, or use another --out.")
            deltas = np.lib.format.open_memmap(out / DELTAS, mode="w+", dtype=np.float32, shape=shape)
            _write_json(out / META, meta)
            (out / PAIRS).touch()
            ledger.record(out / META)
            ledger.record_growing(out / DELTAS, out / PAIRS)  # filled pair by pair: hashed when they are done
        else:
            deltas = _open_deltas(out, meta, mode="r+")
            if deltas.shape != shape:
                raise ProbeError(f"{out / DELTAS}: shape {deltas.shape} but the model gives {shape}")
        with open(out / PAIRS, "a", encoding="utf-8") as log, tqdm(total=len(pairs), initial=len(done),
                                                                   desc="probing pairs", unit="pair") as bar:
            for start in range(0, len(todo), batch_size):
                rows = todo[start:start + batch_size]
                batch = [pairs[row] for row in rows]
                picture = [images.open_image(p.image, p.where).convert("RGB") for p in batch]
                prompts = ([(p.question(), im) for p, im in zip(batch, picture)]
                           + [(p.swapped_question(), im) for p, im in zip(batch, picture)])
                states, first = model.last_token_states(prompts, chosen)
                n = len(batch)
                deltas[:, rows, :] = states[:, n:, :] - states[:, :n, :]
                deltas.flush()
                log.writelines(json.dumps({"row": row, "id": pair.pair_id, "label": pair.label, "axis": pair.axis,
                                          "question": pair.question(), "swapped": pair.swapped_question(),
                                          "first_token": first[i], "first_token_swapped": first[n + i]}) + "\n" for i, (row, pair) in enumerate(zip(rows, batch)))
                log.flush()
                os.fsync(log.fileno())
                bar.update(n)
        del deltas
    elif meta is None:
        raise ProbeError(f"{out}: nothing to probe (no pairs) and no earlier probe here")
    return recompute(out, layer)


def _open_deltas(out: Path, meta: dict, mode: str = "r") -> np.ndarray:
    path = out / DELTAS
    if not path.is_file():
        raise ProbeError(f"{path}: missing (the folder has {META} but no deltas); use --overwrite")
    try:  # a truncated file cannot be memory-mapped (ValueError "mmap length ..."), a damaged header neither
        deltas = np.load(path, mmap_mode=mode)
    except (ValueError, OSError, EOFError) as err:
        raise ProbeError(f"{path}: cannot read it ({' '.join(str(err).split())[:120]}); the file is damaged or "
                         "truncated: rerun the probe with --overwrite") from None
    expected = (len(_layers(meta)), meta["pairs"], meta["hidden_size"])
    if deltas.shape != tuple(expected):
        raise ProbeError(f"{path}: shape {deltas.shape}, expected {tuple(expected)} from {META}")
    return deltas


def _layers(meta: dict) -> list[int]:
    """The decoder layers a probe folder holds, in the order of ``deltas.npy``'s first axis."""
    return list(meta.get("layers", range(meta["num_layers"])))


def _write_json(path: Path, value: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, allow_nan=True), encoding="utf-8")
    tmp.replace(path)


def recompute(out: Path, layer: int | None = None) -> ProbeSummary:
    """Metrics, the chosen layer (or ``layer``, named by the user) and the figures from the saved
    deltas of ``out`` (no model)."""
    out = Path(out)
    meta = _read_meta(out)
    if meta is None:
        raise ProbeError(f"{out}: no {META} here (not a probe folder)")
    done = done_rows(out)
    if not done:
        raise ProbeError(f"{out}: no finished pair yet ({PAIRS} is empty)")
    deltas = _open_deltas(out, meta)
    rows = sorted(done)
    labels = [done[row]["label"] for row in rows]
    saved = _layers(meta)
    per_layer = {layer: probing.metrics_of(np.asarray(deltas[k, rows, :]), labels)
                 for k, layer in enumerate(tqdm(saved, desc="metrics per layer", unit="layer", leave=False))}
    if layer is not None:
        if layer not in per_layer:
            raise ProbeError(f"--layer {layer}: {out} holds layers {saved[0]}-{saved[-1]}"
                             if saved == list(range(saved[0], saved[-1] + 1)) else
                             f"--layer {layer}: {out} holds layers {saved}")
        why = "named with --layer"
    else:
        layer, why = probing.choose_layer(per_layer, meta["num_layers"], meta["model"])
    counts = {label: labels.count(label) for label in probing.AXIS_OF}
    paper = probing.paper_table5(meta["model"], meta["num_layers"])
    zero = max((m["zero_deltas"] for m in per_layer.values()), default=0)
    result = {"model": meta["model"], "data": meta["data"], "pairs_done": len(rows), "pairs": meta["pairs"],
              "counts": counts, "layer": layer, "layer_reason": why,
              "at_layer": None if layer is None else per_layer[layer], "zero_deltas": zero,
              # 95 % intervals of the coherences at that layer (items resampled per axis, seeded)
              "intervals": None if layer is None else probing.coherence_intervals(
                  np.asarray(deltas[saved.index(layer), rows, :]), labels),
              "paper_table5": paper, "per_layer": {str(k): v for k, v in per_layer.items()}}
    ledger = Ledger(out, PROBE)
    ledger.check([out / METRICS, out / METRICS_CSV, out / "coherence.png", *out.glob("pca_layer*.png")],
                 what_to_do="Move them away, or use another --out.")
    _write_json(out / METRICS, result)
    with open(out / METRICS_CSV, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        keys = list(next(iter(per_layer.values())))
        writer.writerow(["layer", *keys])
        for k, values in per_layer.items():
            writer.writerow([k, *(f"{values[key]:.6f}" for key in keys)])
    from spatial_tasks.spatialtunnel.probe.plots import coherence_plot, pca_plot

    ledger.remove(*out.glob("pca_layer*.png"), what_to_do="Move them away, or use another --out.")  # an earlier layer
    files = [out / METRICS, out / METRICS_CSV,
             coherence_plot(per_layer, layer, meta["model"], paper, out / "coherence.png")]
    if layer is not None:
        files.append(pca_plot(np.asarray(deltas[saved.index(layer), rows, :]), labels, layer, meta["model"],
                              out / f"pca_layer{layer}.png"))
    ledger.record(*files)
    if len(done) == meta["pairs"]:  # finished: the growing files get their final hash
        ledger.record(out / DELTAS, out / PAIRS)
    return ProbeSummary(out=out, done=len(rows), total=meta["pairs"], layer=layer, why=why, metrics=result, files=files)
