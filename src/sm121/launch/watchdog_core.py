"""What every watchdog does, local or cluster: record itself in the run (so `stop` can signal
it while it is still that process), then boot, watch and, after each death, let the restart
policy decide; SIGTERM (what `sm121 stop` sends) ends it.

A watchdog supplies the parts that differ (`boot`, `watch`, `after_death`, and what to do
when it is stopped); the loop and the signal handling live here once."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from sm121.errors import Sm121Error
from sm121.hosts import processes
from sm121.runs.state import NodeProcess, RunInfo, now_iso, update_run


class Death(Sm121Error):
    """An engine's death, as a watchdog saw it: how, whether during boot or while serving,
    the exit status where the watchdog is the engine's parent, and the dead nodes of a
    cluster run (none: the head's /health, or a local engine)."""

    def __init__(self, how: str, during: str, exit_code: int | None = None,
                 dead: Sequence[NodeProcess] = ()) -> None:
        super().__init__(how)
        self.how, self.during, self.exit_code, self.dead = how, during, exit_code, list(dead)


def stop_on_sigterm() -> None:
    """From now on SIGTERM is this process's Ctrl-C: it raises KeyboardInterrupt wherever
    the watchdog is. Not an Sm121Error on purpose: the `except Sm121Error` of a best-effort
    step (a hook, an ssh command, a restart) must never swallow a stop."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


class WatchdogCore:
    """The supervision loop of one run. `booted`: the engine is already up when the watchdog
    starts (a cluster run, booted by serve with its own rollback), so the first round
    watches without booting."""

    booted = False

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def say(self, what: str, done: float | None = None, total: float | None = None, /
            ) -> None:
        """The watchdog's Progress: lines in watchdog.log, which serve shows."""
        print(f"{now_iso()} {what}", flush=True)

    def boot(self) -> None:
        """Start the engine to its first generation; Death (during boot) when it does not."""
        raise NotImplementedError

    def watch(self) -> None:
        """Until the engine dies: raises Death."""
        raise NotImplementedError

    def after_death(self, death: Death) -> bool:
        """Record the crash; True when a restart is allowed (after its backoff)."""
        raise NotImplementedError

    def on_stop(self) -> None:
        """SIGTERM arrived: leave the run as stop expects to find it."""

    def cleanup(self) -> None:
        """Whatever the way out: what this watchdog itself must not leave running."""

    def announce(self) -> None:
        """The first line of the watchdog's log, once it recorded itself."""

    def main(self) -> int:
        mark = processes.identity(os.getpid())

        def record(run: RunInfo) -> None:
            run.watchdog_pid = os.getpid()
            run.watchdog_boot_id, run.watchdog_start_time = mark.boot_id, mark.start_time

        update_run(self.run_id, record)
        self.announce()
        booted = self.booted
        while True:
            try:
                if not booted:
                    self.boot()
                booted = False
                self.watch()
            except Death as death:
                booted = False  # after a death the next round boots again
                if not self.after_death(death):
                    return 1

    def run(self) -> int:
        """main, with a stop (SIGTERM, Ctrl-C) as the normal way out: status 0."""
        try:
            return self.main()
        except KeyboardInterrupt:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # finish stopping
            self.on_stop()
            self.say("stopping: stop asked for it")
            return 0
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.cleanup()
