"""A process that has imported what a console script (``lmms-eval`` or ``spatial-tasks``) imports,
forking one child per run of it.

Importing lmms-eval costs ~7 s of CPU here (evaluate -> transformers.pipelines -> torchvision ->
torch._dynamo), more than half of a small run, and the tests make ~60 runs; a ``spatial-tasks``
command spends 1-4 s importing torch, datasets and matplotlib, and the tests run ~100. Each child is
what the console script would be after its first line: it takes the run's working folder,
environment, argv, stdin (/dev/null), stdout and stderr (files), calls the ``main`` the console
script calls (``from MODULE import main``, read from the script) and ends as the script does (its
exit status, threads joined, atexit handlers run, output flushed), without tearing down the heap it
shares with the server (``_end``). What a child cannot see is what
happened at import: ``tests/lmms.py`` sends a run whose environment differs there to the console
script itself.

What the server imports beyond the script's module is what its runs import anyway and nothing that
changes a process's behaviour on import: for ``spatial-tasks`` not lmms-eval, whose ``utils`` turns
every warning off (a command that never imports it shows them).

Protocol (one run at a time), JSON lines: the server prints ``{"ready", "threads", "env"}`` once; then for each
request ``{"argv", "env", "cwd", "stdout", "stderr"}`` it prints ``{"pid": ...}`` when the child
starts and ``{"returncode": ...}`` when it ends. Started by ``tests/lmms.py``, never by hand.
"""

import atexit
import contextlib
import gc
import importlib
import json
import os
import re
import signal
import sys
import threading


def _child(request: dict, main) -> None:
    """Runs in the forked child: becomes the console script's process, then ends as it would (``_end``)."""
    os.setsid()  # its own process group, so that a timeout kills the run and what it started
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = list(request["argv"])
    try:
        code = main()  # the console script's own last line is sys.exit(main())
    except SystemExit as stop:
        code = stop.code
    except BaseException as err:  # noqa: BLE001 - reported as the interpreter reports it
        sys.excepthook(type(err), err, err.__traceback__)
        _end(1, interrupted=isinstance(err, KeyboardInterrupt))
    _end(code)


def _end(code: object, interrupted: bool = False) -> None:
    """What the interpreter does when the script ends, up to the teardown of its heap: the exit status
    ``sys.exit(code)`` gives (a code that is not a number is printed, status 1), other threads joined,
    the atexit handlers run, stdout and stderr flushed (status 120 when that fails); an uncaught Ctrl-C
    ends by SIGINT. Then ``os._exit``: the teardown that would follow frees every object the server
    imported, one by one, copying each memory page the child still shares with the server -- ~2.5 s of
    CPU per lmms-eval run here, for nothing the script prints or writes."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()  # what the interpreter calls first: thread pools told to stop, other threads joined
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status & 0xFF)


def serve(main) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)  # the child's fd 1 becomes its stdout file
    threads = threading.active_count()
    # Its environment after the imports (torch sets TORCHINDUCTOR_CACHE_DIR, for one): a run whose
    # environment differs from this one in a variable read at import is not forked.
    print(json.dumps({"ready": True, "threads": threads, "env": dict(os.environ)}), file=protocol)
    for line in sys.stdin:
        request = json.loads(line)
        if threading.active_count() != 1:
            raise RuntimeError(f"cannot fork safely: {threading.active_count()} threads are running")
        pid = os.fork()
        if pid == 0:
            protocol.close()
            _child(request, main)  # never returns: the child ends in os._exit
        print(json.dumps({"pid": pid}), file=protocol)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), file=protocol)


def _preload(script_module: str) -> None:
    """What the script's runs import later, imported once here."""
    if script_module.startswith("lmms_eval"):
        # The console script's module, and what its main() imports on the way to an evaluation
        # (with lmms-eval's model registry, which loads the plugins' entry points, ours included).
        import lmms_eval.__main__
        import lmms_eval.cli.dispatch  # noqa: F401

        # What every run imports later, in lmms_eval.api.metrics.stderr_for_metric (~0.8 s: nltk,
        # scikit-learn), guarded there the same way.
        with contextlib.suppress(Exception):  # as there: an optional task's extras (spacy) may not import
            import lmms_eval.tasks.amber_g.utils  # noqa: F401
    else:  # spatial-tasks: the libraries its commands import when they run (see the module docstring)
        for name in ("datasets", "torch", "transformers", "matplotlib.pyplot"):
            importlib.import_module(name)


if __name__ == "__main__":
    script = os.environ["LMMS_FORKSERVER_SCRIPT"]
    # sys.path[0] is what the console script's would be (its own folder), not this file's folder,
    # so that nothing under tests/ is importable in a run.
    sys.path[0] = os.path.dirname(script)
    with open(script) as text:
        module = re.search(r"^from (\S+) import main$", text.read(), re.MULTILINE).group(1)
    main = importlib.import_module(module).main
    _preload(module)
    # The imported modules' objects live as long as the process: keep them out of the children's
    # collections (lmms-eval runs gc.collect() at a model's end, ~0.6 s over this heap each time).
    # A child's own objects are collected as in a fresh process; a child never frees the frozen ones (``_end``).
    gc.freeze()
    serve(main)
    os._exit(0)  # its requests have ended: freeing the frozen heap (~3 s) would only delay the worker's exit
