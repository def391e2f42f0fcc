"""The canonical DORI doc: one place that says what every loaded question looks like.

Every source (the official ``appledora/DORI-Benchmark`` in any layout ``load.py`` supports, and
our generator's datasets) is mapped onto ``DOC_FIELDS`` by ``load.py``. Facts of the paper that
are data (task list, sources, Table 5's broad classes) live here as tables.

Paper: Nichols et al., "Right Side Up? Disentangling Orientation Understanding in MLLMs with
Fine-grained Multi-axis Perception Tasks", arXiv 2505.21649.
"""

from __future__ import annotations

from spatial_tasks.benchmark import Source

# The release, and the variable that points the tasks elsewhere.
SOURCE = Source("appledora/DORI-Benchmark", env="SPATIAL_TASKS_DORI_SOURCE", note="configs discovered at load time")

BENCHMARK = "dori"

# The seven tasks in the paper's order (Table 2 columns), with the paper's short names.
TASKS: dict[str, str] = {
    "view_parallelism": "VP",
    "directional_facing": "DF",
    "single_axis_rotation": "SA",
    "compound_rotation": "CR",
    "inter_object_direction": "IO",
    "viewer_scene_direction": "VS",
    "canonical_orientation": "CO",
}
GRANULARITIES = ("coarse", "granular")
TASK_NAMES = tuple(f"{t}_{g}" for t in TASKS for g in GRANULARITIES)  # the 14 tasks: dori_<task>_<granularity>
# Tasks whose questions show two images (before / after).
TWO_IMAGE_TASKS = frozenset({"compound_rotation", "viewer_scene_direction"})
# Tasks that ask about two objects (boxes A and B).
TWO_OBJECT_TASKS = frozenset({"inter_object_direction"})

# Source datasets (paper §3.2) and whether their images are natural photographs.
NATURAL_SOURCES = ("KITTI", "Cityscapes", "COCO", "COCO-Space-SEA", "NOCS-REAL", "Objectron")
SIMULATED_SOURCES = ("JTA", "3D-Future", "Get3D", "OmniObject3D", "ShapeNet")
# Our generator's renders are simulated; transformed photographs keep the source's kind.
GENERATED_SOURCE = "spatial-tasks-render"

# Table 5 (Appendix), kept as the paper prints it: some categories are in two classes (bottle,
# bowl and wine glass are both Food and Containers); a question counts under every class of its
# category. A category in no class is "Miscellaneous" (the paper's catch-all).
BROAD_CLASSES: dict[str, tuple[str, ...]] = {
    "Vehicle": ("car", "truck", "tram", "van", "bus", "train", "airplane", "boat", "motorcycle", "bicycle", "coach",
                "bike", "motorbike", "trailer"),
    "Person": ("pedestrian", "cyclist", "person"),
    "Animals": ("zebra", "dog", "elephant", "giraffe", "cat", "horse", "sheep", "bird", "cow", "bear", "starfish"),
    "Food": ("pizza", "broccoli", "donut", "orange", "apple", "tomato", "potato", "cake", "egg", "wine glass", "bowl",
             "bottle", "onion"),
    "Containers": ("bottle", "cup", "wine glass", "bowl", "medicine_bottle", "box"),
    "Furniture": ("chair", "sofa", "table", "lamp", "bench", "sofa-chair", "soft-sofa"),
    "Electronics": ("laptop", "tv", "display", "camera", "laptop-camera"),
    "Miscellaneous": ("clock", "vase", "toilet", "umbrella", "teddy bear", "rifle", "stop sign", "toy_train",
                      "toy_bus", "house", "ball", "scene", "pattern"),
}


def broad_classes(category: str | None) -> list[str]:
    """Table 5's classes of a category (case-insensitive; "_" and " " alike); ["Miscellaneous"]
    for a category the table does not list."""
    if not category:
        return ["Miscellaneous"]
    key = category.strip().lower().replace("_", " ")
    found = [name for name, members in BROAD_CLASSES.items()
             if key in {m.replace("_", " ") for m in members}]
    return found or ["Miscellaneous"]


def is_natural(source: str | None) -> bool | None:
    """Whether a source dataset is natural (photographs); None when the source is unknown."""
    if not source:
        return None
    key = source.strip().lower().replace("_", "-").replace(" ", "-")
    if key in {s.lower() for s in NATURAL_SOURCES} or key in ("nocs", "nocs-real", "coco-space"):
        return True
    if key in {s.lower() for s in SIMULATED_SOURCES} or key in ("3dfuture", "3d-future", GENERATED_SOURCE):
        return False
    return None


def task_name(task: str, granularity: str) -> str:
    """The lmms-eval task name, e.g. dori_view_parallelism_coarse."""
    return f"dori_{task}_{granularity}"


# A doc, as process_docs returns it (images are referenced, never copied into docs).
DOC_FIELDS = (
    "benchmark", "question_id", "task", "granularity",
    "image", "image2",  # image references (common.images); image2 only for two-image tasks
    "boxes",            # [{"label": "A", "box": [x0, y0, x1, y1]}] in pixels of the (first) image
    "boxes_drawn",      # True when the image already shows the boxes (the official release)
    "question",         # the dataset's own question text ("" when it has none)
    "options",          # option texts in the dataset's order
    "answer_index",     # index of the correct option in ``options``
    "option_values",    # JSON: the structured value each option means (soft accuracy), or null
    "truth",            # JSON: the structured ground truth (angles, directions, components, ops)
    "shown_order",      # the seeded permutation: shown option k is options[shown_order[k]]
    "seed",
    "source", "category", "broad_classes", "natural", "n_options", "object_a", "object_b",
)

# Our generator's parquet layout (one row per question; ``image2`` is empty for one-image tasks):
# ``GENERATED_FEATURES`` / ``BOX_FEATURE``, built on first use (``__getattr__``) so that importing the
# schema does not import ``datasets`` (the registry and ``spatial-tasks --help`` import it).
def _generated_features() -> dict:
    import datasets

    box = {"label": datasets.Value("string"), "box": datasets.List(datasets.Value("float32"))}
    return {"BOX_FEATURE": box, "GENERATED_FEATURES": datasets.Features({
        "question_id": datasets.Value("string"),
        "task": datasets.Value("string"),
        "granularity": datasets.Value("string"),
        "image": datasets.Image(),
        "image2": datasets.Image(),
        "boxes": datasets.List(box),
        "question": datasets.Value("string"),
        "options": datasets.List(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "option_values": datasets.Value("string"),
        "truth": datasets.Value("string"),
        "source": datasets.Value("string"),
        "category": datasets.Value("string"),
    })}


def __getattr__(name: str):
    if name in ("BOX_FEATURE", "GENERATED_FEATURES"):
        globals().update(_generated_features())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------- prompt parameters

DRAW_BOXES = ("auto", "always", "never")  # the task argument draw_boxes (tasks.doc_to_visual)


def prompt_seed(value: object) -> int:
    """The task argument seed (the option order's seed): an integer >= 0."""
    try:
        seed = int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"DORI: the task argument seed must be an integer, got {value!r}") from None
    if seed < 0:
        raise ValueError(f"DORI: the task argument seed must be >= 0, got {seed}")
    return seed


def check_prompt(kwargs: dict) -> None:
    """A task's prompt parameters (the ``PromptCheck`` DORI offers; checked by custom-task and when the
    task's docs load): seed an integer >= 0, draw_boxes one of ``DRAW_BOXES``."""
    if "seed" in kwargs:
        prompt_seed(kwargs["seed"])
    if "draw_boxes" in kwargs and str(kwargs["draw_boxes"]) not in DRAW_BOXES:
        raise ValueError(f"DORI: the task argument draw_boxes must be one of {DRAW_BOXES}, got {kwargs['draw_boxes']!r}")
