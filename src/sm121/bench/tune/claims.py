"""When tune may say "A beats B" (pure). A claim needs, in one sitting: at least 3 boots per
arm, exactly one knob differing between them, the effect's 95% interval over boots (one
value per boot: a continuous metric, judged TTFT p95, not the saturating goodput) clear of 0,
and the same direction at a second N. Otherwise the report says "no difference shown" and
which of these it lacked: repetitions on one boot share its misses, so they are not boots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sm121.bench.stats import difference_interval
from sm121.bench.tune.result import Claim, Effect

MIN_BOOTS = 3
MIN_NS = 2


def claim(a: str, b: str, boots_a: Mapping[int, Sequence[float]],
          boots_b: Mapping[int, Sequence[float]], differs: Sequence[str],
          metric: str = "ttft_p95_judged_s", lower_is_better: bool = True) -> Claim:
    """`boots_x`: N -> one value per boot of arm x at that N. `differs`: the knobs whose
    values differ between a and b."""
    reasons: list[str] = []
    if len(differs) != 1:
        reasons.append(f"{len(differs)} knobs differ ({', '.join(differs) or 'none'}), "
                       "not one")
    ns = sorted(set(boots_a) | set(boots_b))
    enough = [n for n in ns if len(boots_a.get(n, ())) >= MIN_BOOTS
              and len(boots_b.get(n, ())) >= MIN_BOOTS]
    if not enough:
        counts = ", ".join(f"N={n}: {len(boots_a.get(n, ()))} and {len(boots_b.get(n, ()))}"
                           for n in ns) or "none"
        reasons.append(f"boots per arm ({counts}); {MIN_BOOTS} each needed")
    effects = []
    for n in enough:
        diff, lo, hi = difference_interval(list(boots_a[n]), list(boots_b[n]))
        better = (hi < 0) if lower_is_better else (lo > 0)
        worse = (lo > 0) if lower_is_better else (hi < 0)
        effects.append(Effect(agents=n, difference=diff, low=lo, high=hi,
                              direction="a" if better else "b" if worse else None))
    if enough:
        clear = [e for e in effects if e.direction]
        if not clear:
            reasons.append("the interval over boots includes 0 at every N measured")
        directions = {e.direction for e in clear}
        if len(directions) > 1:
            reasons.append("the direction differs between Ns")
        elif len(clear) < MIN_NS:
            reasons.append(f"a clear effect at {len(clear)} N; the same direction at "
                           f"{MIN_NS} Ns needed")
    winner = None if reasons else (a if effects[0].direction == "a" else b)
    text = (f"{winner} beats {b if winner == a else a} on {metric} at N="
            f"{', '.join(str(e.agents) for e in effects)}" if winner else
            f"no difference shown between {a} and {b}: " + "; ".join(reasons))
    return Claim(a=a, b=b, metric=metric, shown=winner is not None, winner=winner,
                 effects=effects, reasons=reasons, text=text)
