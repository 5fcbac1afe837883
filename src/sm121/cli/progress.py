"""Progress for the long waits (an engine's boot, bench scenarios, an A/B, a warm-read): a
rich spinner with the elapsed time, and a bar when the work is counted, on a terminal; plain
lines that a log file or CI output can keep otherwise.

Plain lines carry the elapsed time. A line is written for every step, for counted work only
when the description changes or another tenth is done, and a heartbeat every `heartbeat_s`
while nothing else was written, so a piped log still shows that a 13-minute boot is alive.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from sm121.cli.output import err_console

HEARTBEAT_S = 30.0


class LongWait:
    def __init__(self, title: str, console: Console | None = None,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        self.console = console or err_console
        self.title = title
        self._heartbeat_s = heartbeat_s
        self._started = time.monotonic()
        self._last = title
        self._last_line = self._started
        self._tenths = -1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar: Progress | None = None
        self._task = TaskID(0)
        self._beat: threading.Thread | None = None

    @property
    def live(self) -> bool:
        """Whether progress is drawn in place (a terminal) rather than written as lines."""
        return self.console.is_terminal

    def __enter__(self) -> LongWait:
        self._started = self._last_line = time.monotonic()
        if self.live:
            # the description is the last line said, which may quote a stranger: never markup
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),
                                 BarColumn(), TimeElapsedColumn(), console=self.console,
                                 transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.title, total=None)
        else:
            self._line(self.title)
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()
        if self._beat is not None:
            self._beat.join(timeout=1)

    def say(self, message: str) -> None:
        """A step of the wait: kept on screen (or written as a line) and shown as the status."""
        self._last = message
        if self._bar is not None:
            self._bar.console.print(message, highlight=False, markup=False)
            self._bar.update(self._task, description=message)
        else:
            self._line(message)

    def progress(self, what: str, done: float | None = None, total: float | None = None, /
                 ) -> None:
        """The library's Progress (sm121.progress): a step, or counted work."""
        if total is None:
            self.say(what)
        else:
            self.update(what, done or 0.0, total)

    def update(self, description: str, done: float, total: float) -> None:
        """Counted progress: `done` of `total` units of work."""
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 0.0
        if self._bar is not None:
            self._bar.update(self._task, description=description, completed=done,
                             total=max(total, 1))
            return
        tenths = int(fraction * 10)
        if description != self._last or tenths != self._tenths:
            self._last, self._tenths = description, tenths
            self._line(f"{description} ({100 * fraction:.0f}%)")

    def _line(self, message: str) -> None:
        with self._lock:
            self._last_line = time.monotonic()
            elapsed = self._last_line - self._started
            self.console.print(f"[{elapsed:7.1f}s] {message}", highlight=False, markup=False,
                               soft_wrap=True)

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(self._heartbeat_s, 1.0)):
            if time.monotonic() - self._last_line >= self._heartbeat_s:
                self._line(f"still waiting: {self._last}")
