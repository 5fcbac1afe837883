"""Does a repetition measured on a boot that already served one differ from the first
repetition of a boot? (pure). With reps per boot, each boot gives pairs: its first
repetition (the one a fresh boot would measure alone) against each later one (the second,
the third, ...). A systematic boot effect (a cold first repetition, or a prefix cache the
salt failed to keep apart) shows as later/first ratios that lean one way; an exact two-sided
sign test says how likely such a lean is by chance. Pairs of one boot share its first
repetition, so with more than two repetitions per boot the test is approximate. With fewer
than 6 untied pairs no lean can reach p < 0.05, which is said."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import median
from typing import Any

from sm121.bench.result_models import AbEntry, BootEffect, BootPair, Number

ALPHA = 0.05
MIN_PAIRS = 6  # 2 * 0.5**5 = 0.0625: five pairs all one way are not yet p < 0.05


def sign_test(up: int, down: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | no effect); ties left out."""
    n = up + down
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(up, down) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def pairs(samples: Sequence[AbEntry[Any, Any]], metric: str) -> list[BootPair]:
    """(profile, boot, k): the metric of the boot's first repetition and of its repetition
    k >= 1, where both measured."""
    by_boot: dict[tuple[str, int], dict[int, Number]] = defaultdict(dict)
    for entry in samples:
        value = getattr(entry.metrics, metric, None)
        if entry.error or value is None or entry.boot_index is None:
            continue
        by_boot[(entry.profile, entry.boot_index)][entry.rep_on_boot or 0] = value
    return [BootPair(profile=p, boot=b, k=k, first=reps[0], later=reps[k])
            for (p, b), reps in sorted(by_boot.items()) if 0 in reps
            for k in sorted(reps) if k > 0]


def boot_effect(samples: Sequence[AbEntry[Any, Any]], metric: str) -> BootEffect:
    found = pairs(samples, metric)
    ratios = [p.later / p.first for p in found if p.first]
    up = sum(p.later > p.first for p in found)
    down = sum(p.later < p.first for p in found)
    p_value = sign_test(up, down)
    if up + down < MIN_PAIRS:
        verdict = (f"too few pairs for a test ({up + down} untied; {MIN_PAIRS} needed): "
                   "read the ratios")
    elif p_value < ALPHA:
        verdict = f"systematic: the later repetition is {'higher' if up > down else 'lower'}"
    else:
        verdict = "no systematic difference detected"
    return BootEffect(metric=metric, pairs=found, n=len(found), later_higher=up,
                      later_lower=down, ties=len(found) - up - down,
                      median_ratio=median(ratios) if ratios else None,
                      min_ratio=min(ratios) if ratios else None,
                      max_ratio=max(ratios) if ratios else None,
                      sign_test_p=p_value, verdict=verdict)


def boot_effects(samples: Sequence[AbEntry[Any, Any]], metrics: list[str]
                 ) -> dict[str, BootEffect]:
    return {m: boot_effect(samples, m) for m in metrics}


def describe(effects: dict[str, BootEffect]) -> list[str]:
    """One line per metric, for the console and the report (effects read from a file are
    checked into their model here)."""
    lines = []
    for metric, e in ((m, BootEffect.model_validate(e)) for m, e in effects.items()):
        if not e.n:
            continue
        ratio = "" if e.median_ratio is None else (
            f", later/first median {e.median_ratio:.3g} "
            f"(range {e.min_ratio:.3g}-{e.max_ratio:.3g})")
        lines.append(f"{metric}: {e.n} pairs (later repetition against the boot's "
                     f"first){ratio}; later higher "
                     f"{e.later_higher}, lower {e.later_lower}, ties {e.ties}; "
                     f"sign test p={e.sign_test_p:.3g}: {e.verdict}")
    return lines
