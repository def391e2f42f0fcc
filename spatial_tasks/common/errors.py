"""The one base of every error a user can cause: bad data, a wrong flag or setting, a missing
file, a busy folder, a missing GPU. ``spatial-tasks`` prints such an error as its one line (exit
2); anything else is a bug and is reported as an internal error."""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import NoReturn


class UserError(Exception):
    """An error the user can cause and fix; its message is one line saying what and where."""


class RunStopped(SystemExit):
    """Ends an lmms-eval run with one line and exit status 2. A SystemExit because lmms-eval's CLI
    catches every Exception, prints a traceback and exits 0."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = " ".join(message.split())

    def __str__(self) -> str:
        return self.message


_SAID: set[str] = set()
_SAYING = threading.Lock()


def stop_run(error: str | RunStopped) -> NoReturn:
    """Print the error as the terminal's last line and end the run (exit status 2). Said once
    however many threads stop the same way (lmms-eval scores docs in a thread pool)."""
    stopped = error if isinstance(error, RunStopped) else RunStopped(error)
    with _SAYING:
        if stopped.message not in _SAID:
            _SAID.add(stopped.message)
            _close_progress_bars()  # an open bar would redraw itself after the line when it is closed
            print(stopped.message, file=sys.stderr, flush=True)
    raise stopped


def _close_progress_bars() -> None:
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        with contextlib.suppress(Exception):  # a bar that cannot close must not hide the error
            bar.close()
