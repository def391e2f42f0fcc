"""ToyBench's sample: n Yes/No questions on 16 px squares, written as the task's parquet."""

from __future__ import annotations

import sys
from pathlib import Path

from spatial_tasks.toybench.core import write_sample

if __name__ == "__main__":
    print(write_sample(Path(sys.argv[1])))
