"""``spatial-tasks probe`` and the demo's probing study: each loads the model (``models.hidden_states``) and
hands it to ``probe.run``, which runs it over the pairs and keeps the folder. CLI level, as the commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spatial_tasks.spatialtunnel.probe.run import ProbeSummary, parse_layers, recompute, run_probe


def probe(out: Path, *, model: str | None = None, data: str | None = None, per_category: int = 200, seed: int = 42,
          strict: bool = False, empty_options: str = "skip", layer: int | None = None, batch_size: int = 8, device: str = "cpu",
          dtype: str = "bfloat16", family: str | None = None, layers: str | None = None, overwrite: bool = False,
          trust_remote_code: bool = False, echo: Callable[[str], None] = print) -> ProbeSummary:
    """``spatial-tasks probe``: probe ``model`` on the pairs of ``data`` into ``out`` (resuming a
    run there), or without both recompute the metrics and figures of ``out``. ``echo`` gets a
    line about the pairs read (and each skipped row) before the model runs."""
    from spatial_tasks.models.arguments import DTYPES
    from spatial_tasks.models.hidden_states import check_torch_device, load_hidden_state_model
    from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs

    chosen = parse_layers(layers)
    check_torch_device(device)
    if model is None and data is None:
        return recompute(out, layer)
    if model is None or data is None:
        raise ValueError("--model and --data go together (neither: recompute from --out)")
    if dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    pairs = load_probe_pairs(data, per_category=per_category, seed=seed, strict=strict, empty_options=empty_options)
    skipped = f", skipped {dict(pairs.skipped)}" if pairs.skipped else ""
    capped = f", {pairs.capped} left out by --per-category {per_category}" if pairs.capped else ""
    echo(f"{len(pairs.pairs)} pairs from {data} ({pairs.layout} layout): {pairs.counts()}{skipped}{capped}")
    for row in pairs.skipped_rows:
        echo(f"  skipped: {row}")
    return run_probe(lambda: load_hidden_state_model(model, family, trust_remote_code, device=device, dtype=dtype),
                     pairs, out,
                     model_name=model, batch_size=batch_size, overwrite=overwrite, layers=chosen, layer=layer)


def probe_bundled_pairs(model_dir: Path, out: Path) -> Path:
    """The demo's study: ``spatial-tasks probe`` of a (tiny) model on the bundled probing pairs
    (replaced on a rerun)."""
    from spatial_tasks.models.hidden_states import load_hidden_state_model
    from spatial_tasks.paths import benchmark_tasks_dir
    from spatial_tasks.spatialtunnel.probe.data import load_probe_pairs

    pairs = load_probe_pairs(benchmark_tasks_dir("spatialtunnel") / "sample" / "contrastive_probing")
    run_probe(lambda: load_hidden_state_model(str(model_dir), device="cpu", dtype="float32"), pairs, out,
              model_name=model_dir.name, batch_size=8, overwrite=True)
    return out
