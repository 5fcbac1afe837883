"""How many arms, repetitions and capacity probes fit a time budget (pure).

An arm costs one boot, its repetitions (with rests between them), its capacity probes (one
agents run each, on the same boot) and a stop. The plan prefers `reps` repetitions; it keeps
as many arms as fit, at least `least` of them, trying fewer repetitions and then fewer probes
before giving up arms. tune (tune/arm_boots.py) plans again before every boot, for the arms
still to measure, with `measured` estimates (tune/costs.py): the median boot and run times
this tune has measured so far, the guesses only until there are none, so a wrong first guess
costs one boot at most."""

from __future__ import annotations

from dataclasses import dataclass

STOP_S = 15.0  # stopping an engine and starting the next measurement


@dataclass(frozen=True)
class Estimates:
    boot_s: float
    rep_s: float  # one agents run at the target N
    rest_s: float = 5.0
    exclusive_s: float = 0.0  # the boot's exclusive long prefill (tune/exclusive.py)


@dataclass(frozen=True)
class Plan:
    candidates: int
    reps: int
    sweep_points: int
    seconds: float  # what the plan is estimated to take
    fits: bool  # False: not even the least plan fits; it is the least plan all the same


def candidate_cost(est: Estimates, reps: int, sweep_points: int) -> float:
    return est.boot_s + est.exclusive_s + reps * est.rep_s + max(0, reps - 1) * est.rest_s + \
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


SETUP_S = 10.0  # an agents run's probe and prompt building, beyond its measured wall_s


def measured(boot_times: list[float], run_walls: list[float], boot_guess: float,
             rep_guess: float, rest_s: float, prefills: list[float] | None = None
             ) -> Estimates:
    """Estimates from the measured boot times (to the first generation), agents runs' wall
    times and long prefills' TTFTs (each plus its setup); a guess stands in only while
    nothing is measured (no prefill measured: none counted)."""
    boots = sorted(t for t in boot_times if t)
    walls = sorted(w for w in run_walls if w)
    long = sorted(t for t in prefills or [] if t)
    return Estimates(boots[len(boots) // 2] if boots else boot_guess,
                     walls[len(walls) // 2] + SETUP_S if walls else rep_guess, rest_s,
                     long[len(long) // 2] + SETUP_S if long else 0.0)
