"""What a watchdog (local or cluster) does after a death: record the crash in the run, as
restarting or, once the policy's limit is reached, failed; then wait the backoff and count
the next start. The limits themselves are restart_policy's (pure)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sm121.launch import restart_policy
from sm121.recipes.schema import RestartPolicy
from sm121.runs.state import Crash, RunInfo, monotonic, now_iso, update_run


@dataclass
class Restarts:
    run_id: str
    policy: RestartPolicy
    say: Callable[[str], None]
    incarnation: int = 0  # 0: the first start, 1: after the first restart, ...
    times: list[float] = field(default_factory=list)  # monotonic, of each restart made

    def after_death(self, during: str, how: str, cause: str, excerpt: list[str],
                    exit_code: int | None = None) -> bool:
        """Record the crash; True after the backoff when a restart is allowed, False when the
        run is now failed."""
        now = monotonic()
        again = restart_policy.may_restart(self.times, now, self.policy)

        def record(run: RunInfo) -> None:
            run.crashes.append(Crash(at=now_iso(), incarnation=self.incarnation,
                                     during=during, how=how, exit_code=exit_code,  # type: ignore[arg-type]
                                     cause=cause, excerpt=excerpt[-20:], restarted=again))
            if again:
                run.restarts += 1
                run.status = "restarting"
            else:
                run.status = "failed"
                run.failure = (f"gave up after {len(self.times)} restarts within "
                               f"{self.policy.within_s:g} s: {how}; cause: {cause}")

        update_run(self.run_id, record)  # others write run.json too
        if not again:
            self.say("restart limit reached: the run is failed")
            return False
        wait = restart_policy.backoff_s(self.times, now, self.policy)
        self.say(f"restarting in {wait:g} s")
        time.sleep(wait)
        self.times.append(monotonic())
        self.incarnation += 1
        return True
