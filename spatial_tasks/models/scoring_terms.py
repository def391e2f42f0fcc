"""The words the scoring paths share: the six paths' names, fastest first, and the two signals a
path raises. Imports nothing (no torch), so the tables a preflight reads (``family_table``,
``model_table``), the pipelines (``packed``) and the strategies (``scoring_paths``) can all use them
without importing each other or torch."""

from __future__ import annotations

PACKED, PREPARED_ONCE, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE = (
    "packed", "prepared_once", "shared_prefix", "grouped", "padded", "one_by_one")
ORDER = (PACKED, PREPARED_ONCE, SHARED_PREFIX, GROUPED, PADDED, ONE_BY_ONE)


class PathUnavailable(RuntimeError):
    """These questions (``lasting``: any question of this run) cannot take this path; the reason is
    one line."""

    def __init__(self, reason: str, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


class NothingToShare(Exception):
    """A batch in which no image is asked about twice: the shared-prefix forward has nothing to save."""
