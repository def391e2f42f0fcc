"""The pixel reader's thresholds (``pixels.py``), one table: each named, with the measurement that
set it. Two kinds of evidence stand beside them:

- **recorded**: what our renders measured when the value was chosen (tables, resolutions and the
  errors named in the line);
- **bundled**: ``benchmarks/pixel_thresholds.py`` reruns ``benchmarks/pixel_split.py``'s figures
  on the bundled 128 px sample (64 phase + 22 size images) with the threshold at a lower and at a
  higher value, and says which figures move. At the values below: phase 256 questions, all placed,
  every 2-way, 3-way and cell label equal to the truth; size 88 questions, 2-way 80 equal + 8
  unknown, 3-way 84 + 4, cells 172 + 4 (none differs). "same at a and b" means the bundled sample
  does not pin the value between them: it rests on the recorded measurement, or was set by hand
  where none is recorded.

Geometry the paper fixes (the scenes' sizes, the 5 % ambiguous line) is not here: it lives in
``geometry.py`` and ``pixels.WALL_SIZES``.
"""

from __future__ import annotations

# ------------------------------------------------------------------------------------------
# Coloured objects: which pixels are foreground

# recorded: our renders' hues under a warm sky light (red ~5, yellow ~45, green ~110, cyan ~160,
# blue ~235, magenta ~333); each range holds its nominal hue and that shift. [start, end) degrees.
HUE_RANGES = {"red": (345.0, 25.0), "yellow": (25.0, 80.0), "green": (80.0, 145.0), "cyan": (145.0, 200.0),
              "blue": (200.0, 275.0), "magenta": (275.0, 345.0)}
# bundled: same at 0.15; at 0.45, 4 phase questions unplaced
MIN_SATURATION = 0.3
# a hue within WALL_HUE_BAND degrees of the walls' (yellow on a warm tunnel) needs MIN_SATURATION_NEAR_WALL,
# or the walls' own saturation plus NEAR_WALL_SATURATION_GAP if that is more
# bundled: at 0.45, 4 phase questions unplaced; same at 0.75
MIN_SATURATION_NEAR_WALL = 0.6
# bundled: at 12.5, 4 size questions unplaced; same at 37.5
WALL_HUE_BAND = 25.0
# bundled: same at 0.1 and 0.3
NEAR_WALL_SATURATION_GAP = 0.2
# bundled: same at 0.03 and 0.09
MIN_CHROMA = 0.06  # max - min of RGB: below it (dark pixels) the hue is 8-bit noise
# bundled: at 0.06, 4 phase questions unplaced; same at 0.18
MIN_CHROMA_NEAR_WALL = 0.12
# the walls' own colour is read from their clearly lit, weakly coloured pixels: value above
# WALL_MIN_VALUE, saturation within WALL_SATURATION, at least WALL_MIN_PIXELS of them (else none is read)
# bundled: same at 0.1 and 0.3
WALL_MIN_VALUE = 0.2
# bundled: at (0.025, 0.25), 140 phase and 44 size questions unplaced, labels differ; same at (0.075, 0.75)
WALL_SATURATION = (0.05, 0.5)
# bundled: same at 25 and 75
WALL_MIN_PIXELS = 50
# bundled: same at 0.75e-4 and 2.25e-4
MIN_AREA_FRACTION = 1.5e-4  # of the image: smaller regions are noise (1.6 px at 128 px)
# bundled: same at 0.025; at 0.075 the 4 size cells left unknown are placed right
CENTRE_EXCLUSION = 0.05  # of the image side: the vanishing point, where no object on a wall can be
# one region with a second hue on at least TWO_HUE_SHARE of its pixels is two touching objects when
# the two hues' centres are more than TWO_HUE_APART of their radii apart (else one object whose faces
# the light turns two hues)
# bundled: same at 0.15 and 0.45
TWO_HUE_SHARE = 0.3
# bundled: same at 0.25 and 0.75
TWO_HUE_APART = 0.5
# a second region at least RIVAL_AREA of the first's area, where one object is named, is reported
# ("two regions of similar size"), never a guess
# bundled: at 0.25, 8 size questions unplaced; same at 0.75
RIVAL_AREA = 0.5

# ------------------------------------------------------------------------------------------
# Black objects: darker than the empty tunnel under the same light

# bundled: at 0.5 the 4 size cells left unknown are placed right; at 0.7, 4 size questions unplaced
DARK_RATIO = 0.6  # a black object is darker than this share of the empty tunnel
# bundled: same at 0.3 and 0.5
STRICT_DARK_RATIO = 0.4  # ... where none is: this, which parts an object from a darker patch
# bundled: at 0.7, 8 size cells unknown (4 here); at 0.9, 4 size questions unplaced
LOOSE_DARK_RATIO = 0.8  # ... or, where none is either, this, on its ring and of its size
# bundled: same at 0.01 and 0.03
DARK_FLOOR = 0.02  # the empty tunnel's brightness is taken as at least this
# recorded: a black region's reach (square radius + apparent radius) over its role's wall, on 17
# tables at 128 and 512 px: the 285 regions within 2 px of their object read 0.85 to 1.06 (a partial
# one reads short); the dark patches by the far end taken for one before this rule, 0.71 to 0.83
# bundled: same at (0.75, 1.1) and (0.85, 1.2)
BLACK_REACH = (0.8, 1.15)
# recorded: on a fresh 512 px render a cube 33 px wide kept 16 of its width by the dark far end; a
# region shorter than COMPLETE of its longer extent is completed towards the vanishing point
# bundled: same at 0.75 and 0.95
COMPLETE = 0.85
# bundled: same at 0.05; at 0.15 the 4 size cells left unknown are placed right
COMPLETE_SLACK = 0.1  # of the longer extent: the completed edge may lie this far inside
# bundled: same at 0.015 and 0.045
LOG_OFFSET = 0.03  # log(value + this): the edge is a step in log brightness
# the empty tunnel: the per-pixel median of the NEIGHBOURS images whose FEATURE_SIDE x FEATURE_SIDE
# brightness thumbnail is closest (at least MIN_BACKGROUND_IMAGES of the same size, else none)
# bundled: at 3, 4 phase and 4 size questions unplaced; at 7 the 4 size cells left unknown are placed right
NEIGHBOURS = 5
# bundled: same at 16 and 48
FEATURE_SIDE = 32
# bundled: same at 2 and 4
MIN_BACKGROUND_IMAGES = 3
CLOSING_SIDE = 0.12  # of the width: a single image's grey closing, its own empty tunnel (no bundled table is one image)

# ------------------------------------------------------------------------------------------
# Where the dataset's objects lie, and their sizes

# bundled: same at 0.0075; at 0.0225, 4 size cells differ
RING_MARGIN = 0.015  # of the width, around a ring (2nd-98th percentile) measured on the coloured objects
# bundled: same at (1, 99) and (3, 97)
RING_PERCENTILES = (2, 98)
# bundled: same at 3 and 7
MIN_RING_OBJECTS = 5  # coloured objects of a role that measure its ring (fewer: no ring)
# recorded: a black region reads smaller than its object (its rim takes the walls' light), down to
# 0.65 of it on our renders; one that reads larger has taken in a shadow (on a fresh 512 px render,
# the regions ruled out were a shadow or a part of a cube, up to 64 px off)
# bundled: same at (0.25, 0.1) and (0.45, 0.2)
SIZE_MARGIN = (0.35, 0.15)
# recorded: on our 512 px renders of the size variant (seed 0, median and half the 10-90 % range):
# the silhouette's area over (pi rho^2) for a sphere or (2 rho)^2 for a cube, and one object's scatter
SHAPE_SPREAD = {"sphere": 1.04, "cube": 1.24}
SHAPE_SCATTER = {"sphere": 0.03, "cube": 0.05}
# bundled: same at 2 and 4
SIZE_SIGMAS = 3  # recorded: the size variant's s1 from the pixels was within 1.5 sigma of the truth (512 px)

# ------------------------------------------------------------------------------------------
# How well rows are known, and what decides a label the rows do not

# recorded: the largest row error against the recorded projections, 1.33 px at 128 px (scaled with
# the height); a black object's up to 1.75 px (512 px, scaled) and 3.9 px at 128 px, where one by the
# far end is a few pixels wide (one of 233 on a 768-image table, 6.4 px: tasks/spatialtunnel/README.md)
# bundled: same at 1.2; at 1.6, 8 size cells unknown (4 here)
LEVEL_PX = 1.4
# bundled: same at 1.25; at 1.75, 12 size cells unknown (4 here)
BLACK_UNCERTAINTY = 1.5
# bundled: same at 1.5 and 2.5
BLACK_EDGE_PX = 2.0
# recorded (benchmarks/pixel_encodings.py, the phase sample re-encoded, 64 images): JPEG quality
# 90 / 75 / 50 / 30 moved rows by up to 1.92 / 2.08 / 3.02 / 3.27 px at 128 px; at quality 10 by up
# to 34 px (9 of 46 placed rows by more than 5 px). A grey image: one of 64 placed, 39 px off.
JPEG_LEVEL_PX = 3.3
JPEG_MIN_QUALITY = 30
GREY_SPREAD = 1.5 / 255  # channels this close everywhere: a grey image (8-bit rounding of a grey render)
# recorded: on 11 tables (128 and 512 px, 5 to 31 spheres a role) the walls' scale was up to 1.6 %
# off at 128 px and 0.5 % at 512 px; SHAPE_SCATTER plus SCALE_EDGE_PX covers it 1.1 to 60 times
# bundled: same at 3 and 7
MIN_SPHERES = 5  # coloured spheres of a role that measure its wall (fewer: no geometry)
# bundled: same at 0.25 and 0.75
SCALE_EDGE_PX = 0.5
# recorded: an axis on which the centre lies within CONTACT of rho of the other's reach touches its
# wall; the turn it undoes is up to 8 deg (a 0.3 m object at 22.5 deg), measured across at most 2.1 px at 128 px
# bundled: same at 0.4 and 0.6
CONTACT = 0.5
# bundled: same at 1 and 3
MIN_CELL_IMAGES = 2  # known images of a cell, all agreeing, that file its near-level ones
