"""Time of the headline intervals at a real benchmark's size: O3-D, one model's released outputs.

    .venv/bin/python benchmarks/bootstrap_time.py [--model InternVL2_5-4B] [--iterations 1000] [--python]

Uses the O3-D authors' released outputs (tests/o3d/data; 44,014 rows per model: 16,193 marked,
27,196 language-variation). The release names no image per row, so each run of two consecutive
rows stands in as a unit (near / far of one scene, as the lmms-eval records pair them); the
timing depends on the number of rows and units, not on which rows pair. Prints, per headline
figure, the value, the 95 % interval and the seconds taken by ``grouped_bootstrap`` (what the
results layer runs), and with ``--python`` also by the row-list ``cluster_bootstrap`` it replaces.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

from spatial_tasks.o3d.rescore import records_from_released
from spatial_tasks.registry import get
from spatial_tasks.common.intervals import cluster_bootstrap

RELEASED = Path(__file__).parents[1] / "tests" / "o3d" / "data" / "released_outputs_5models.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="InternVL2_5-4B")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--python", action="store_true", help="also time the row-list bootstrap (minutes)")
    args = parser.parse_args()
    by_model: dict[str, list[dict]] = defaultdict(list)
    for record in records_from_released(RELEASED):
        by_model[record["model"]].append(record)
    rows = by_model[args.model]
    scopes = {"marked": [r for r in rows if r.get("is_marked")],
              "language": [r for r in rows if not r.get("is_marked") and not r.get("is_real")]}
    for name, scope in scopes.items():
        for i, row in enumerate(scope):
            row["subset_name"], row["image_name"] = name, f"unit{i // 2}"
    spec = get("o3d").scorecard
    print(f"{args.model}: {len(rows)} rows; marked {len(scopes['marked'])}, language {len(scopes['language'])}; "
          f"{args.iterations} resamples")
    for headline in spec.headlines:
        scope = scopes["language" if headline.metric == "sdgm_language" else "marked"]
        start = time.perf_counter()
        low, high, method = headline.interval(scope, spec.unit, args.iterations, 0)
        took = time.perf_counter() - start
        line = (f"{headline.metric:14} {headline.value(scope):8.4f} [{low:.4f}, {high:.4f}] {method:17} "
                f"{took:7.2f} s")
        if args.python and headline.grouped is not None:
            start = time.perf_counter()
            slow = cluster_bootstrap(scope, headline.value, spec.unit, args.iterations, 0)
            line += f"   row-list: [{slow[0]:.4f}, {slow[1]:.4f}] {time.perf_counter() - start:7.2f} s"
        print(line)


if __name__ == "__main__":
    main()
