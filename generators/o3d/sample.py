"""The bundled O3-D sample (``tasks/o3d/sample``): rendered by this generator, in the release's layout.

    python -m spatial_tasks.generators.o3d.sample tasks/o3d/sample

* kb-0cue: a cube in the basic environment, target near, far and none (3 images);
* kb-1cue: the same scene with each of the 8 cues, near and far, strengths 1 and 2 (FS: the two
  built-in familiar-size pairs, no strength sweep) -- 32 images;
* kb-2cue: four cue pairs (HP+SA, OC+RS, LS+TG, FO+FS; FS on both pairs), near and far, strength 1
  -- 10 images;
* real-012cue-cropped: photos cannot be rendered, so the 12 crops are PIL-drawn stand-ins in the
  release's layout (spatial_tasks.generators.o3d.standins), with the authors' left/right questions;
* visual_questions: 4 questions per rendered image (one per clarity) and the crops' questions.

128 x 128 px, 16 samples, seed 0; everything is deterministic (a test rebuilds it and compares).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from spatial_tasks.generators.common import dataset as ds
from spatial_tasks.generators.common.folder import dataset_ledger
from spatial_tasks.generators.o3d import generate as gen
from spatial_tasks.generators.o3d import standins

from spatial_tasks.o3d import schema

RESOLUTION = 128
SAMPLES = 16
REAL = "real-012cue-cropped"
REAL_COUNT = 12
REAL_SIZE = (256, 192)
RUNS = (
    dict(cues="none,all-single", strengths="1,2", positions="near,far,none"),
    dict(cues="HP+SA,OC+RS,LS+TG,FO+FS", strengths="1", positions="near,far"),
)


def build_sample(out: Path, *, progress: bool = False) -> Path:
    """Render the sample into ``out`` (replaced), add the stand-in crops, write questions and card."""
    out = Path(out)
    ledger = dataset_ledger(out)
    if out.exists():  # only a sample this script built (the folder's ledger says so) is replaced
        ledger.remove(*out.iterdir(), what_to_do="Move them away (the bundled sample is in git), or pass a new folder.")
    for run in RUNS:
        gen.generate(out, objects="cube", envs="basic", resolution=RESOLUTION, samples=SAMPLES, seed=0,
                     progress=progress, **run)
    ledger.remove(out / gen.WORK_DIR)  # render work files are never shipped
    (out / ".spatial-tasks.lock").unlink(missing_ok=True)
    _add_real_crops(out)
    gen.write_card(out)
    return out


def _add_real_crops(out: Path) -> None:
    """The stand-in crops as a config, and their questions appended to visual_questions."""
    columns = standins.real_rows(REAL, REAL_COUNT, 0, REAL_SIZE)
    folder = out / REAL
    folder.mkdir(parents=True, exist_ok=True)
    features = schema.subset_features(REAL)
    table = pa.Table.from_pydict({c: columns[c] for c in features}, schema=features.arrow_schema)
    pq.write_table(table, folder / ds.parquet_name(schema.SPLIT, 0, 1))
    questions_path = out / schema.QUESTIONS_CONFIG / ds.parquet_name(schema.SPLIT, 0, 1)
    rendered = pq.read_table(questions_path)
    crops = standins.question_rows(REAL, columns["image_name"], 0, standins.prompt_pools())
    extra = pa.Table.from_pylist(crops, schema=rendered.schema.remove_metadata())
    ds.write_parquet(pa.concat_tables([rendered.replace_schema_metadata(None), extra]).to_pylist(),
                     schema.QUESTION_FEATURES, questions_path, ds.read_generation(questions_path))


if __name__ == "__main__":
    print(build_sample(Path(sys.argv[1] if len(sys.argv) > 1 else "tasks/o3d/sample"), progress=True))
