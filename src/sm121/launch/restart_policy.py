"""When a supervised engine may be restarted, and how long to wait first. Pure."""

from __future__ import annotations

from sm121.recipes.schema import RestartPolicy

MAX_BACKOFF_S = 30.0


def recent(restart_times: list[float], now: float, policy: RestartPolicy) -> int:
    """Restarts made within the policy's window before `now` (monotonic seconds)."""
    return sum(1 for t in restart_times if now - t <= policy.within_s)


def may_restart(restart_times: list[float], now: float, policy: RestartPolicy) -> bool:
    return policy.policy == "on-failure" and recent(restart_times, now, policy) < policy.max


def backoff_s(restart_times: list[float], now: float, policy: RestartPolicy) -> float:
    """1 s, then doubling with each recent restart: a crash loop slows down, a crash after
    hours of service restarts at once."""
    return min(MAX_BACKOFF_S, 2.0 ** recent(restart_times, now, policy))


def describe_exit(code: int | None) -> str:
    if code is None:
        return "the process group is gone (exit status unknown)"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exited with status {code}"
