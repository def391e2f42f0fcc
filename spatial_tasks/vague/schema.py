"""The canonical VAGUE doc and the official item format, in one place.

Paper: Nam, Ahn, Ka, Chung, Yu, "VAGUE: Visual Contexts Clarify Ambiguous Expressions",
ICCV 2025 (arXiv 2411.14137); code github.com/Hazel-Heejeong-Nam/VAGUE.

An official item (VAGUE 2.0; VAGUE 1.0 named the wrong options 2_incorrect_fake_scene,
3_incorrect_surface_understanding, 4_incorrect_entity)::

    {"image_name": "...", "direct": "...", "indirect": "...", "solution": "(person1, move, sedan)",
     "mcq": {"1_correct": "...", "2_fake_scene": "...", "3_surface_understanding": "...",
             "4_wrong_entity": "...", "ordering": ["C", "A", "B", "D"]},
     "meta": {"caption": "...", "ram_entity": [...], "img_size": {"width": W, "height": H},
              "person_bbox": [[x1, y1, x2, y2], ...], "rating": {"direct": 5, "indirect": 4},
              "annot_link": "...", "fake_caption": "..."}}

``ordering[i]`` is the letter of option i in the fixed order (correct, FS, SU, NE): the gold
letter is ``ordering[0]``, and the choices are shown as the sorted lines "A: ...".
"""

from __future__ import annotations

from spatial_tasks.benchmark import Source

SOURCE = Source("HazelNam/vague-bench", env="SPATIAL_TASKS_VAGUE_SOURCE")  # the release, and its override

BENCHMARK = "vague"
SUBSETS = {"vcr": "VAGUE-VCR", "ego4d": "VAGUE-Ego4D"}
OFFICIAL_COUNTS = {"vcr": 1144, "ego4d": 533}  # the release's items per subset (paper; the '@' rule gives them)
IMAGE_SUFFIX = "_annot.jpg"  # the person-tagged image of an item: <image_name>_annot.jpg
LETTERS = ("A", "B", "C", "D")

# Option types in the fixed order of ``ordering``: the correct intention, then the three wrong ones.
CORRECT, FAKE_SCENE, SURFACE, NONEXISTENT = "correct", "FS", "SU", "NE"
OPTION_TYPES = (CORRECT, FAKE_SCENE, SURFACE, NONEXISTENT)
WRONG_TYPES = (FAKE_SCENE, SURFACE, NONEXISTENT)
OPTION_KEYS = {  # type -> accepted keys, VAGUE 2.0 first
    CORRECT: ("1_correct",),
    FAKE_SCENE: ("2_fake_scene", "2_incorrect_fake_scene"),
    SURFACE: ("3_surface_understanding", "3_incorrect_surface_understanding"),
    NONEXISTENT: ("4_wrong_entity", "4_incorrect_entity"),
}

# The multiple-choice settings of the paper (and the code's SM_gpt), in Table 1's order; each is one
# lmms-eval task per subset (free-form: freeform, freeform_cot).
MCQ_SETTINGS = ("lm", "sm", "sm_gpt", "vlm", "vlm_cot", "sm_cot")
FREEFORM_SETTINGS = ("freeform", "freeform_cot")

DOC_FIELDS = (
    "benchmark", "item_id", "subset", "index", "image_name",
    "image",                                    # an image reference (common.images), None for an item without one
    "tags",                                     # person tags: "in image", or "drawn" by doc_to_visual (none in the image)
    "direct", "indirect", "solution", "listener",
    "letters", "option_texts", "option_types",  # the four options, sorted by letter
    "answer",                                   # the gold letter, ordering[0]
    "correct_intention",                        # mcq.1_correct (the free-form reference)
    "caption", "fake_caption", "entities", "person_boxes", "width", "height", "rating_direct", "rating_indirect",
)
