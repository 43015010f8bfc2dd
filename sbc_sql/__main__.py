"""The sbc-sql command (also ``python -m sbc_sql``): the signals first, then the app.

Ctrl-C (SIGINT) and SIGTERM raise KeyboardInterrupt in the main thread, once: the command
line (cli.py) turns it into one line and exit code 130 once everything the run made is
rolled back and removed; a second signal while that clean-up runs is ignored, so that it
finishes. The handlers are installed before the app is imported (typer and the option
declarations; the package's __init__ loads nothing), and a command loads DuckDB, Arrow,
numpy and the kernels inside its error handling (cli.reported), so Ctrl-C at start-up is
that one line too. The library installs no handler: only this entry point does.

``sbc-sql --version`` alone is answered here, before typer loads (it is what scripts ask
most, to check what is installed); with anything else beside it the app answers it.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

#: what an interrupted command says (cli.py says the same)
INTERRUPTED = "Interrupted; nothing was written."


def version_line() -> str:
    """What --version prints (cli.py prints the same)."""
    from . import __version__

    return f"sbc-sql {__version__}"


_stopping = False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping:
        return  # the first one is being handled: let its clean-up finish
    _stopping = True
    raise KeyboardInterrupt


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(version_line() + "\n")
        return
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        from .cli import app
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        raise SystemExit(130) from None
    app()


if __name__ == "__main__":
    main()
