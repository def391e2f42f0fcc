"""The one base of every error a user can cause: bad data, a wrong flag or setting, a missing
file, a busy folder, a missing GPU. ``spatial-tasks`` prints such an error as its one line (exit
2); anything else is a bug and is reported as an internal error."""

from __future__ import annotations


class UserError(Exception):
    """An error the user can cause and fix; its message is one line saying what and where."""
