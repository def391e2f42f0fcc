"""Which lmms-eval we support (checked when the seam is imported), and (10) what lmms-eval needs at
run time but does not pin (``RUNTIME_NEEDS``)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata as _metadata

from spatial_tasks.common.errors import UserError

SUPPORTED = ("0.7.3", "0.8")  # lmms-eval >= 0.7.3, < 0.8


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def check_version(found: str | None = None) -> str:
    """The installed lmms-eval version, if supported; else ImportError naming the range."""
    if found is None:
        try:
            found = _metadata.version("lmms_eval")
        except _metadata.PackageNotFoundError:
            raise ImportError("spatial-tasks needs lmms-eval (pip install 'lmms-eval==0.7.3')") from None
    low, high = SUPPORTED
    if not _version_tuple(low) <= _version_tuple(found) < _version_tuple(high):
        raise ImportError(f"spatial-tasks supports lmms-eval >={low},<{high}; found {found}. Install "
                          f"'lmms-eval=={low}' (spatial_tasks/harness/ holds every assumption about lmms-eval)")
    return found


LMMS_EVAL_VERSION = check_version()


@dataclass(frozen=True)
class RuntimeNeed:
    """A module lmms-eval imports at run time from a package whose versions it does not bound."""

    package: str
    module: str
    works: str  # the versions known to work, as a pip specifier
    why: str


RUNTIME_NEEDS = (
    RuntimeNeed("filelock", "filelock._api", ">=3.16,<4.3",
                "lmms-eval 0.7.3's simple_evaluate imports filelock._api (filelock 4.3 removed it)"),
)


class UpstreamBreak(UserError):
    """An installed package lacks what lmms-eval needs at run time."""


def runtime_problems(needs: Sequence[RuntimeNeed] = RUNTIME_NEEDS) -> list[str]:
    """One line per unmet need: package, installed version, working range, the fix."""
    out = []
    for need in needs:
        try:
            importlib.import_module(need.module)
        except ImportError:
            try:
                found = _metadata.version(need.package)
            except _metadata.PackageNotFoundError:
                found = "not installed"
            out.append(f"{need.package} {found} breaks lmms-eval: {need.why}; {need.package}{need.works} works. "
                       f"Fix: pip install '{need.package}{need.works}' (or, in a checkout, the tested set: bash .ci/setup)")
    return out


def check_runtime() -> None:
    """Raise ``UpstreamBreak`` naming the first unmet runtime need (see ``runtime_problems``)."""
    problems = runtime_problems()
    if problems:
        raise UpstreamBreak(problems[0])
