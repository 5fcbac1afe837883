"""The targets (pure): goodput >= 95% and the long prefill's in-situ cost <= 5%, and, when
no arm meets both, which bound binds and by how much. The ranking is by capacity
(tune/choose.py)."""

from __future__ import annotations

from collections.abc import Callable

from sm121.bench.tune.result import ArmRow, Binding
from sm121.memory.goodput import GOODPUT_TARGET  # the verdict's: tune ranks by what it judges

COST_TARGET = 0.05


def _pct(value: float | None) -> str:
    """A share as a percentage, or "not measured": an arm can meet goodput while its long
    prefill was not priced (no reference arm, or the job missed the agents' window)."""
    return "not measured" if value is None else f"{value:.1%}"


def meets(row: ArmRow, goodput: float = GOODPUT_TARGET, cost: float = COST_TARGET
          ) -> tuple[bool, bool]:
    g = row.goodput is not None and row.goodput >= goodput
    c = row.prefill_cost is not None and row.prefill_cost <= cost
    return g, c


def binding(table: list[ArmRow], goodput: float = GOODPUT_TARGET,
            cost: float = COST_TARGET, show: Callable[[str], str] = str) -> Binding:
    """Whether some candidate meets both targets; if none does, which bound binds, by how
    much, and what the engine would need. `show`: how an arm's name is written in the text
    (report.md makes it inert Markdown; tune.json and the console keep it as it is)."""
    both = [r.name for r in table if all(meets(r, goodput, cost))]
    if both or not table:
        return Binding(met=bool(both), candidates=both, text=(
            f"{', '.join(map(show, both))} meet(s) goodput >= {goodput:.0%} and prefill cost <= "
            f"{cost:.0%}" if both else "nothing was measured"))
    good = [r for r in table if meets(r, goodput, cost)[0]]
    cheap = [r for r in table if meets(r, goodput, cost)[1]]
    parts = []
    if good:
        best = min(good, key=lambda r: r.prefill_cost if r.prefill_cost is not None
                   else float("inf"))
        priced = ("its long prefill was not priced" if best.prefill_cost is None else
                  f"costs {best.prefill_cost:.1%}, {best.prefill_cost - cost:.1%} over "
                  f"{cost:.0%}")
        parts.append(f"the cost bound binds: the cheapest candidate meeting goodput "
                     f"({show(best.name)}) {priced}")
    if cheap:
        best = max(cheap, key=lambda r: r.goodput or 0)
        parts.append(f"the goodput bound binds: the best candidate within the cost "
                     f"({show(best.name)}) reaches {_pct(best.goodput)}, "
                     f"{goodput - (best.goodput or 0):.1%} short of {goodput:.0%}")
    if not good and not cheap:
        parts.append("both bounds bind: no candidate meets either")
    need = ("the engine would need short requests admitted within one step during the long "
            "prefill without slowing it: a step budget of the long prefill's chunk plus the "
            "short requests' tokens")
    return Binding(met=False, candidates=[], text="; ".join(parts) + f". {need}.")
