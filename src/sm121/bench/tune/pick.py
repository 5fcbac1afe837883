"""The pick (pure): per candidate its measured row (goodput over repetitions, the background
job's prefill cost, KV capacity, the largest N meeting the SLO), ranked by goodput, then by
the prefill cost (lower first), then by KV capacity (larger first). And, when no candidate
meets both targets, which bound binds and by how much."""

from __future__ import annotations

from typing import Any

from sm121.bench.stats import summarize

GOODPUT_TARGET = 0.95
COST_TARGET = 0.05


def rows(samples: list[dict[str, Any]], names: list[str], costs: dict[str, float | None],
         kv: dict[str, int | None], largest: dict[str, int | None]) -> list[dict[str, Any]]:
    """One row per candidate measured at least once (errors are left out of the medians)."""
    out = []
    for name in names:
        runs = [s["metrics"] for s in samples if s["profile"] == name and not s.get("error")
                and s.get("metrics")]
        if not runs:
            continue
        goodput = summarize([r.get("goodput") for r in runs])
        out.append({"name": name, "reps": len(runs), "goodput": goodput["median"],
                    "goodput_min": goodput["min"], "goodput_max": goodput["max"],
                    "ttft_p95_judged_s": summarize([r.get("ttft_p95_judged_s")
                                                    for r in runs])["median"],
                    "background_ttft_s": summarize([r.get("background_ttft_s")
                                                    for r in runs])["median"],
                    "prefill_cost": costs.get(name), "kv_tokens": kv.get(name),
                    "largest_n": largest.get(name)})
    return out


def rank(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(row: dict[str, Any]) -> tuple[float, float, float]:
        cost = row["prefill_cost"]
        return (-(row["goodput"] if row["goodput"] is not None else -1.0),
                cost if cost is not None else float("inf"), -(row["kv_tokens"] or 0))

    return sorted(table, key=key)


def meets(row: dict[str, Any], goodput: float = GOODPUT_TARGET, cost: float = COST_TARGET
          ) -> tuple[bool, bool]:
    g = row["goodput"] is not None and row["goodput"] >= goodput
    c = row["prefill_cost"] is not None and row["prefill_cost"] <= cost
    return g, c


def binding(table: list[dict[str, Any]], knee_share: dict[str, float] | None = None,
            goodput: float = GOODPUT_TARGET, cost: float = COST_TARGET) -> dict[str, Any]:
    """Whether some candidate meets both targets; if none does, which bound binds, by how
    much, and what the engine would need."""
    both = [r["name"] for r in table if all(meets(r, goodput, cost))]
    if both or not table:
        return {"met": bool(both), "candidates": both, "text": (
            f"{', '.join(both)} meet(s) goodput >= {goodput:.0%} and prefill cost <= "
            f"{cost:.0%}" if both else "nothing was measured")}
    good = [r for r in table if meets(r, goodput, cost)[0]]
    cheap = [r for r in table if meets(r, goodput, cost)[1]]
    parts = []
    if good:
        best = min(good, key=lambda r: r["prefill_cost"] if r["prefill_cost"] is not None
                   else float("inf"))
        over = (best["prefill_cost"] or 0) - cost
        parts.append(f"the cost bound binds: the cheapest candidate meeting goodput "
                     f"({best['name']}) costs {best['prefill_cost']:.1%}, {over:.1%} over "
                     f"{cost:.0%}")
    if cheap:
        best = max(cheap, key=lambda r: r["goodput"] or 0)
        parts.append(f"the goodput bound binds: the best candidate within the cost "
                     f"({best['name']}) reaches {best['goodput']:.1%}, "
                     f"{goodput - (best['goodput'] or 0):.1%} short of {goodput:.0%}")
    if not good and not cheap:
        parts.append("both bounds bind: no candidate meets either")
    need = ("the engine would need short requests admitted within one step without "
            "shrinking the long prefill's step below the knee (a step budget of the knee "
            "plus the short requests' tokens, with the threshold at the knee), or a "
            "prefill rate at small steps within 5% of its peak")
    if knee_share:
        small = [f"{step} tokens at {share:.0%}" for step, share in knee_share.items()
                 if share < 1 - cost]
        if small:
            need += f" (measured: {', '.join(small)} of the peak rate)"
    return {"met": False, "candidates": [], "text": "; ".join(parts) + f". {need}."}
