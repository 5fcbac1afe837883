"""What the budget left after every arm's boot buys (pure): more boots of two finalists,
interleaved (A, B, A, B, ...), each one run at the target N and one at a second N, so that
"A beats B" can be tested over boots at two Ns (tune/claims.py). The finalists are the chosen
arm and the baseline (one knob apart for a step-1 arm); when the baseline is chosen, the
runner-up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sm121.bench.tune.result import CapacityRecord


def finalists(ranking: Sequence[str], baseline: str | None, excluded: set[str]
              ) -> list[str]:
    ranked = [n for n in ranking if n not in excluded]
    if not ranked:
        return []
    first = ranked[0]
    other = baseline if baseline and baseline != first and baseline in ranked else \
        next((n for n in ranked[1:]), None)
    return [first] + ([other] if other else [])


def second_n(target: int, brackets: Sequence[CapacityRecord]) -> int | None:
    """The other N the finalists are compared at: the smaller of their brackets' lo (an N
    both may hold), else half the target; None when that is the target or below 1."""
    los = [b.lo for b in brackets if b.lo]
    n = min(los) if los and min(los) != target else target // 2
    return n if n >= 1 and n != target else None


def next_boot(boots: Mapping[str, int], order: Sequence[str], per_arm: int) -> str | None:
    """The finalist to boot next (the one with fewer boots, in order), or None when each has
    `per_arm` boots."""
    short = [n for n in order if boots.get(n, 0) < per_arm]
    return min(short, key=lambda n: (boots.get(n, 0), order.index(n))) if short else None
