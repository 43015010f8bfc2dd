"""The progress bars on stderr: the clustering's, and those of evaluate's and report's long steps."""

import sys
import time


class ProgressBar:
    """A one-line bar with ETA on stderr, drawn only on a terminal. As a context manager it
    ends a line it left unfinished, so that an error or an interruption is read on a line
    of its own."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        # the rate is measured from the first report on, so that a first run's compiling
        # (before any row is placed) does not inflate the estimate
        self.first: tuple[float, int] | None = None
        self.last = 0.0
        self.open_line = False

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.open_line:
            sys.stderr.write("\n")
            self.open_line = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.perf_counter()
        if self.first is None:
            self.first = (now, done)
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = done / total
        started, done_then = self.first
        rate = (done - done_then) / (now - started) if now > started and done > done_then else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {done}/{total} eta {eta:5.1f}s")
        self.open_line = done < total
        if not self.open_line:
            sys.stderr.write("\n")
        sys.stderr.flush()


class StepBars:
    """One :class:`ProgressBar` per step of a command, each labelled with the step's name:
    ``bars(step, done, total)``. Drawn only on a terminal, never with ``enabled=False``
    (--quiet, --json). As a context manager it ends a line it left unfinished."""

    def __init__(self, prefix: str, enabled: bool | None = None) -> None:
        self.prefix = prefix
        self.enabled = enabled
        self.bar: ProgressBar | None = None

    def __enter__(self) -> "StepBars":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, step: str, done: int, total: int) -> None:
        label = f"{self.prefix}: {step}"
        if self.bar is None or self.bar.label != label:
            if self.bar is not None:
                self.bar.__exit__(None, None, None)
            self.bar = ProgressBar(label, self.enabled)
        self.bar(done, total)
