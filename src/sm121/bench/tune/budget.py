"""How many candidates, repetitions and sweep points fit a time budget (pure).

A candidate costs one boot, its repetitions (with rests between them), its sweep points
(one agents run each, on the same boot) and a stop. The plan prefers `reps` repetitions
(three give a median with spread); it keeps as many candidates as fit, at least `least`
of them, trying fewer repetitions and then fewer sweep points before giving up candidates.
Estimates come from what this tune already measured (its knee boot, its first agents run)
and are re-planned after every candidate, so a wrong first guess costs little."""

from __future__ import annotations

from dataclasses import dataclass

STOP_S = 15.0  # stopping an engine and starting the next measurement


@dataclass(frozen=True)
class Estimates:
    boot_s: float
    rep_s: float  # one agents run at the target N
    rest_s: float = 5.0


@dataclass(frozen=True)
class Plan:
    candidates: int
    reps: int
    sweep_points: int
    seconds: float  # what the plan is estimated to take
    fits: bool  # False: not even the least plan fits; it is the least plan all the same


def candidate_cost(est: Estimates, reps: int, sweep_points: int) -> float:
    return est.boot_s + reps * est.rep_s + max(0, reps - 1) * est.rest_s + \
        sweep_points * (est.rep_s + est.rest_s) + STOP_S


def plan(left_s: float, est: Estimates, available: int, reps: int = 3, sweep_points: int = 2,
         least: int = 2) -> Plan:
    """The most candidates (up to `available`) that fit `left_s`, at the most repetitions
    and sweep points that still let `least` candidates fit."""
    least = min(least, available)
    for r in range(reps, 0, -1):
        for sweep in range(sweep_points, -1, -1):
            cost = candidate_cost(est, r, sweep)
            k = min(available, int(left_s // cost)) if cost > 0 else available
            if k >= max(1, least):
                return Plan(k, r, sweep, k * cost, True)
    cost = candidate_cost(est, 1, 0)
    return Plan(max(1, least), 1, 0, max(1, least) * cost, False)
