"""The sbc-sql command (also ``python -m sbc_sql``): the signals first, then the app.

Ctrl-C (SIGINT) and SIGTERM raise KeyboardInterrupt in the main thread, once: the command
line (cli/app.py) turns it into one line and exit code 130 once everything the run made is
rolled back and removed; a second signal while that clean-up runs is ignored, so that it
finishes. The handlers are installed before the app is imported (typer and the option
declarations; the package's __init__ loads nothing), and a command loads DuckDB, Arrow,
numpy and the kernels inside its error handling (cli.reported), so Ctrl-C at start-up is
that one line too. The library installs no handler: only this entry point does.

Python runs a handler only between bytecodes, so a signal that arrives while the main thread
waits in native code is handled when that call returns. The PostgreSQL driver (ADBC) answers
SIGINT there with a handler of its own, which cancels the statement on the server; SIGTERM
it does not know, and a long statement went on to its end (the run ignored SIGTERM for as long,
and the server kept the query). So every SIGTERM also reaches a watcher thread (Python's wakeup
fd), which turns the first one into a SIGINT to this process: whatever the main thread waits in,
SIGTERM stops it the way Ctrl-C does.

The process is the command's own, which the app is told (``cli.app.own_process``): what a
command imports lives until the process ends, so the garbage collector stops walking it once
it has loaded (``cli.app.loading``), during the run and at exit.

The process ends as soon as the command has: its exit functions run and its output is
flushed as at any exit, and then it leaves without the interpreter's teardown of the some 500
modules a run loads, which only frees memory the system takes back anyway (about 20 ms of an
anonymize run on Adult). An exit message rather than a code, or output that cannot be
flushed, ends it the usual way.

``sbc-sql --version`` alone is answered here, before typer loads (it is what scripts ask
most, to check what is installed); with anything else beside it the app answers it.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from types import FrameType
from typing import NoReturn

from .errors import INTERRUPTED, SIGNALLED
from .version import version_line

_stopping = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping:
        return  # the first one is being handled: let its clean-up finish
    _stopping = True
    raise KeyboardInterrupt


def _forward_sigterm(read: int) -> None:
    """Read the signal numbers Python's C handler writes to the wakeup fd; the first SIGTERM
    (unless Ctrl-C came first) is sent on as SIGINT, so a native wait that cancels on SIGINT
    (the PostgreSQL driver's) cancels on SIGTERM too. Later ones are left to the handler,
    which ignores them while the clean-up runs. Either signal sets ``errors.SIGNALLED`` at
    once: a call that fails before the main thread runs the handler failed because of it."""
    while True:
        try:
            received = os.read(read, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not received:
            return
        if signal.SIGINT in received or signal.SIGTERM in received:
            SIGNALLED.set()
        if signal.SIGTERM in received and not _stopping:
            os.kill(os.getpid(), signal.SIGINT)
            return


def _watch_sigterm() -> None:
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover - not the main thread, or no such fd
        os.close(read)
        os.close(write)
        return
    threading.Thread(target=_forward_sigterm, args=(read,), name="sbc-sql-sigterm", daemon=True).start()


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(version_line() + "\n")
        return
    signal.signal(signal.SIGINT, _interrupt)
    # from here a signal raises KeyboardInterrupt: while the other handler and the watcher
    # start too (a thread's start waits, and a signal lands in that wait)
    try:
        signal.signal(signal.SIGTERM, _interrupt)
        _watch_sigterm()
        from .cli import app
        from .cli.app import own_process
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        raise SystemExit(130) from None
    own_process()
    try:
        app()
    except SystemExit as done:
        _leave(done)


def _leave(done: SystemExit) -> NoReturn:
    """End the process with ``done``'s code (see the module docstring): what the interpreter
    does at exit before its teardown, in its order (threading's shutdown, which waits for
    every thread that is not a daemon, then the exit functions), and then the flushed output."""
    code = 0 if done.code is None else done.code
    if not isinstance(code, int):
        raise done
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: as Python reports it at exit
        raise done from None
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
