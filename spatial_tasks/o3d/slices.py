"""What one O3-D task evaluates -- its slice of the questions -- as its YAML ``metadata`` declares it:
the image subsets (or a group of them), the marking, the clarity level and whether ICL
demonstrations are attached. Read by the task's process_docs and by ``custom-task``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spatial_tasks.o3d import schema

SYNTHETIC_TASK_SUBSETS = ("kb-0cue", "kb-1cue", "kb-2cue")
ICL_SUBSETS = ("kb-1cue", "kb-2cue")  # a CoT demonstration needs at least one cue
REAL_TASK_SUBSETS = ("real-012cue-cropped",)  # Table 12's real columns use the cropped set only
CLARITY = {"low": 2.0, "med": 3.0, "high": 3.5}

# Each task's slice is data: its YAML's ``metadata`` names the image subsets (or a group of them),
# the marking, the clarity level and whether demonstrations are attached.
SUBSET_GROUPS = {"synthetic": SYNTHETIC_TASK_SUBSETS, "real": REAL_TASK_SUBSETS, "icl": ICL_SUBSETS}


@dataclass(frozen=True)
class Slice:
    """What one O3-D task evaluates (its YAML ``metadata``: subsets, marked, clarity, demonstrations)."""

    subsets: tuple[str, ...]
    marked: bool
    clarity: float | None = None
    demonstrations: bool = False

    @classmethod
    def of(cls, metadata: Mapping[str, Any], task: str = "the task") -> Slice:
        """The slice a task's metadata declares; a missing or bad key is a clear error naming it."""
        def bad(key: str, why: str) -> schema.SchemaError:
            return schema.SchemaError(f"{task}: metadata.{key} {why} (the O3-D tasks' YAMLs declare subsets, marked, "
                                      "clarity and demonstrations; tasks/o3d/README.md)")

        subsets = metadata.get("subsets")
        if isinstance(subsets, str):
            if subsets not in SUBSET_GROUPS:
                raise bad("subsets", f"is {subsets!r}: one of {', '.join(SUBSET_GROUPS)} or a list of subset names")
            subsets = SUBSET_GROUPS[subsets]
        if not isinstance(subsets, (list, tuple)) or not subsets or not all(isinstance(s, str) for s in subsets):
            raise bad("subsets", f"is {subsets!r}: a subset group or a list of subset names")
        marked = metadata.get("marked")
        if not isinstance(marked, bool):
            raise bad("marked", f"is {marked!r}: true or false")
        clarity = metadata.get("clarity")
        clarity = CLARITY.get(clarity, clarity) if isinstance(clarity, str) else clarity
        if clarity is not None and (isinstance(clarity, bool) or not isinstance(clarity, (int, float))):
            raise bad("clarity", f"is {metadata.get('clarity')!r}: null, {', '.join(CLARITY)} or a number")
        demonstrations = metadata.get("demonstrations", False)
        if not isinstance(demonstrations, bool):
            raise bad("demonstrations", f"is {demonstrations!r}: true or false")
        return cls(tuple(subsets), marked, None if clarity is None else float(clarity), demonstrations)
