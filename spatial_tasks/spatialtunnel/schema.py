"""SpatialTunnel schemas: the one place that names every field.

Two shapes:

* ``IMAGE_FEATURES`` — one row per rendered image, as our generator publishes it (images stored
  once; the four questions nested in ``questions``). Hub configs ``phase_variation`` and
  ``size_variation``, split ``test``.
* ``DOC_FIELDS`` — the canonical per-question doc every task hook, metric and baseline sees.
  ``spatial_tasks.spatialtunnel.load.to_docs`` maps every source (our datasets, the official
  ``cubec/spatialtunnel`` TSV configs) onto it.
"""

from __future__ import annotations

import datasets

VARIANTS = ("phase", "size")
CONFIG_FOR_VARIANT = {"phase": "phase_variation", "size": "size_variation", "probing": "contrastive_probing"}
SPLIT = "test"
COLORS = ("red", "green", "blue", "yellow", "cyan", "magenta", "black")
SHAPES = ("sphere", "cube")
RELATIONS = ("consistent", "counter", "ambiguous")

_point3 = datasets.List(datasets.Value("float64"), length=3)
_point2 = datasets.List(datasets.Value("float64"), length=2)

IMAGE_FEATURES = datasets.Features(
    {
        "image": datasets.Image(),
        "image_id": datasets.Value("string"),  # stable id, e.g. "phase-r03-c11-k07"
        "variant": datasets.Value("string"),  # phase | size
        "grid": datasets.Value("int32"),  # number of angular positions per object
        "theta1_index": datasets.Value("int32"),
        "theta2_index": datasets.Value("int32"),
        "theta1": datasets.Value("float64"),  # degrees, from +X towards +Z (see geometry.py)
        "theta2": datasets.Value("float64"),
        "depth1": datasets.Value("float64"),  # m along the axis; obj1 is always farther
        "depth2": datasets.Value("float64"),
        "size1": datasets.Value("float64"),  # half-extent in m, after the random factor
        "size2": datasets.Value("float64"),
        "size1_nominal": datasets.Value("float64"),  # before the factor (0.2/0.1; size sweep value)
        "size2_nominal": datasets.Value("float64"),
        "color1": datasets.Value("string"),
        "shape1": datasets.Value("string"),
        "color2": datasets.Value("string"),
        "shape2": datasets.Value("string"),
        "obj1": datasets.Value("string"),  # "<colour> <shape>"
        "obj2": datasets.Value("string"),
        "roughness1": datasets.Value("float64"),
        "roughness2": datasets.Value("float64"),
        "sun_rotation": datasets.Value("float64"),  # radians
        "position1": _point3,  # world xyz of the object centres
        "position2": _point3,
        "pixel1": _point2,  # (column, row) projected by the render camera
        "pixel2": _point2,
        "radius1_px": datasets.Value("float64"),  # apparent radius in pixels
        "radius2_px": datasets.Value("float64"),
        "width": datasets.Value("int32"),
        "height": datasets.Value("int32"),
        "seed": datasets.Value("int64"),  # per-image seed derived from the run seed and image_id
        "questions": datasets.List(  # a list of structs (datasets' Sequence of a dict is a dict of lists)
            {
                "template_id": datasets.Value("int32"),
                "question": datasets.Value("string"),
                "answer": datasets.Value("string"),
            }
        ),
    }
)

# Canonical per-question doc. ``image`` is a reference (common.images.ImageTable.ref) that
# doc_to_visual opens; the rest are plain columns. Optional geometry is None when a source cannot
# provide it.
DOC_FIELDS: dict[str, str] = {
    "benchmark": "string: always 'spatialtunnel'",
    "image": "struct: an image reference (common.images)",
    "question_id": "string: '<image_id>-q<template_id>'",
    "image_id": "string",
    "variant": "string: phase | size",
    "grid": "int: angular positions per object",
    "theta1_index": "int | None",
    "theta2_index": "int | None",
    "theta1": "float degrees | None",
    "theta2": "float degrees | None",
    "depth1": "float m | None (obj1 farther)",
    "depth2": "float m | None",
    "size1": "float m | None (half-extent)",
    "size2": "float m | None",
    "size1_nominal": "float m | None (size sweep value s1)",
    "obj1": "string: '<colour> <shape>'",
    "obj2": "string",
    "x1": "float px | None",
    "y1": "float px | None",
    "x2": "float px | None",
    "y2": "float px | None",
    "radius1_px": "float | None",
    "radius2_px": "float | None",
    "width": "int | None",
    "height": "int | None",
    "dy": "float px | None: row(obj2) - row(obj1), > 0 when the farther object is higher",
    "relation": "string: consistent | counter | ambiguous (|dy| < 5% height) | unknown",
    "relation_two_way": "string: consistent | counter | unknown (paper's split)",
    "geometry": "string: where positions come from: recorded (our generator) | columns | pixels (pixels.py)",
    "template_id": "int 1..4",
    "subject": "string: obj1 | obj2",
    "comparison": "string: closer | farther",
    "question": "string (without the answer-format suffix)",
    "answer": "string: Yes | No",
    "source": "string: which loader produced the doc",
}

# The generator's ``probing`` variant (config ``contrastive_probing``): one probing question per
# image in the prompt layout of probe/data.py (index, image, question, answer) plus the scene.
PROBING_FEATURES = datasets.Features(
    {
        **{name: feature for name, feature in IMAGE_FEATURES.items() if name != "questions"},
        "index": datasets.Value("int64"),
        "question": datasets.Value("string"),  # probe.data.TEMPLATES, about `query` relative to `reference`
        "answer": datasets.Value("string"),  # left | right | above | below | far | close
        "query": datasets.Value("string"),
        "reference": datasets.Value("string"),
    }
)
FEATURES_FOR_VARIANT = {"phase": IMAGE_FEATURES, "size": IMAGE_FEATURES, "probing": PROBING_FEATURES}
