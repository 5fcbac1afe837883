"""An arm's capacity N*: the most concurrent agents meeting the SLO, bracketed by bisection
on one boot (pure). The boot holds max-num-seqs >= the largest N tested + 1, so a probe is
never capped by the arm's own sequence limit.

Each outcome is one agents run at N (or the majority of the repetitions at the target N):
met or missed. The bracket is `lo <= N* < hi`: lo the largest N met below every miss (0: none
met), hi the smallest N missed (None: no miss up to the largest N tested). It is a bracket,
never a point: one run per N says "met" or "missed" at that N, nothing between two Ns."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sm121.bench.tune.result import CapacityRecord


@dataclass(frozen=True)
class Bracket:
    lo: int  # the largest N met below every miss; 0 when none was met
    hi: int | None  # the smallest N missed; None when none was, up to the largest tested
    tested: tuple[tuple[int, bool], ...]  # (N, met) in the order measured
    non_monotone: bool = False  # some N above a miss met the SLO (noise, or a real bump)

    @property
    def text(self) -> str:
        if not self.tested:
            return "not measured"
        if self.hi is None:
            return f"N* >= {self.lo} (met at every N tested, up to {self.lo})"
        if self.lo == 0:
            return f"N* < {self.hi} (missed at {self.hi}; no N tested met)"
        return f"{self.lo} <= N* < {self.hi}"

    def record(self) -> CapacityRecord:
        """As tune.json keeps it (with its text)."""
        return CapacityRecord(lo=self.lo, hi=self.hi, text=self.text, tested=list(self.tested),
                              non_monotone=self.non_monotone)


def text_of(record: CapacityRecord) -> str:
    """A bracket's text made again from its numbers: what a report shows, since the text
    tune.json keeps is a stranger's once the file is shared (docs/stranger-data.md)."""
    return Bracket(record.lo, record.hi, tuple(record.tested)).text


def bracket(outcomes: Iterable[tuple[int, bool]]) -> Bracket:
    tested = tuple((int(n), bool(m)) for n, m in outcomes)
    missed = [n for n, met in tested if not met]
    hi = min(missed) if missed else None
    lo = max((n for n, met in tested if met and (hi is None or n < hi)), default=0)
    return Bracket(lo, hi, tested, any(met and hi is not None and n > hi
                                       for n, met in tested))


def first_probes(predicted: int, most: int | None = None) -> tuple[int, int]:
    """The two agent counts a capacity search tests first around a prediction of `predicted`
    agents held: about 0.9x (which should meet) and about 1.1x, at least one past it (which
    should miss); a search bisects only where the measurement disagrees."""
    below = max(1, min(predicted, math.floor(0.9 * predicted)))
    above = max(predicted + 1, math.ceil(1.1 * predicted))
    if most is not None:
        above = min(above, most)
        below = min(below, max(1, above - 1))
    return below, above


def next_probe(outcomes: Iterable[tuple[int, bool]], largest: int, resolution: int = 1,
               predicted: int | None = None) -> int | None:
    """The next N to run on this boot, or None when the bracket is as narrow as asked
    (hi - lo <= resolution) or met at `largest`, the most this boot's max-num-seqs holds.
    With a prediction (the agents the arm's pool should hold), about 0.9x and 1.1x of it
    come first, each while it still lies inside the bracket; bisection goes on only where
    the measurement disagrees."""
    found = bracket(outcomes)
    tried = {n for n, _ in found.tested}
    if predicted is not None and predicted > 0:
        for n in first_probes(predicted, most=largest):
            if n not in tried and n > found.lo and (found.hi is None or n < found.hi):
                return n
    if found.hi is None:
        return largest if found.lo < largest and largest not in tried else None
    if found.hi - found.lo <= max(1, resolution):
        return None
    mid = (found.lo + found.hi) // 2
    return mid if mid >= 1 and mid not in tried else None


def resolution_for(target: int) -> int:
    """How narrow a bracket is worth its runs: a quarter of the target, at least 1."""
    return max(1, target // 4)
