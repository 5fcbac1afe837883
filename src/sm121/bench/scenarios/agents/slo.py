"""Service-level objectives for agent turns, and goodput: the share of turns meeting them all.

`--slo ttft_p95=2s,decode_p50=20` has one term per metric. A term is two checks:
- per turn: the turn's own value meets the threshold (TTFT <= 2 s; decode >= 20 tok/s); a
  turn counts toward goodput only when it meets every term;
- over the run: the given percentile of the metric over all turns meets the threshold (the
  p95 of TTFT <= 2 s; the median decode >= 20 tok/s). The run meets the SLO when every term
  does; `bench sweep` looks for the largest N that still does.

Metrics (per turn): ttft (s, lower is better), e2e (s, lower), itl (the turn's p95 interval
between tokens, s, lower), decode (tok/s after the first token, higher).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sm121.bench.scenarios.agents.models import SloJudgement, TermJudgement
from sm121.bench.stats import percentile
from sm121.errors import Sm121Error

# metric -> (per-turn record key, unit, lower is better)
METRICS: dict[str, tuple[str, str, bool]] = {
    "ttft": ("ttft_s", "s", True),
    "e2e": ("e2e_s", "s", True),
    "itl": ("itl_p95_s", "s", True),
    "decode": ("decode_tok_s", "tok/s", False),
}
DEFAULT_SLO = "ttft_p95=2s"
_TERM = re.compile(r"^(?P<metric>[a-z0-9]+)_p(?P<q>\d+(?:\.\d+)?)=(?P<value>[0-9.]+)"
                   r"(?P<unit>ms|s|tok/s)?$")


@dataclass(frozen=True)
class Term:
    metric: str
    q: float
    threshold: float  # seconds for times, tok/s for decode

    @property
    def key(self) -> str:
        return METRICS[self.metric][0]

    @property
    def lower_is_better(self) -> bool:
        return METRICS[self.metric][2]

    @property
    def name(self) -> str:
        unit = METRICS[self.metric][1]
        return f"{self.metric}_p{self.q:g}={self.threshold:g}{'' if unit == 'tok/s' else unit}"

    def meets(self, value: float | None) -> bool:
        if value is None:
            return False
        return value <= self.threshold if self.lower_is_better else value >= self.threshold


def parse_slo(text: str | None) -> list[Term]:
    """'ttft_p95=2s,decode_p50=20' -> terms; a clear error names the bad term."""
    terms = []
    for raw in (text or DEFAULT_SLO).split(","):
        part = raw.strip().replace(" ", "")
        if not part:
            continue
        match = _TERM.match(part)
        if match is None or match["metric"] not in METRICS:
            raise Sm121Error(f"bad SLO term {raw.strip()!r}",
                             f"write METRIC_pQ=VALUE with METRIC one of {', '.join(METRICS)}, "
                             "e.g. ttft_p95=2s,decode_p50=20 (times in s or ms)")
        q, value = float(match["q"]), float(match["value"])
        if not 0 < q <= 100:
            raise Sm121Error(f"bad percentile in SLO term {part!r}", "use p1..p100")
        if match["unit"] == "ms":
            value /= 1000
        terms.append(Term(match["metric"], q, value))
    if not terms:
        raise Sm121Error("the SLO has no terms", f"example: --slo {DEFAULT_SLO}")
    return terms


class Judged(Protocol):
    """A record an SLO judges: an agent's turn, a replayed trace request."""

    def metric(self, key: str) -> float | None: ...


def evaluate(terms: list[Term], turns: Sequence[Judged]) -> SloJudgement:
    """Goodput and the run-level verdict of each term over these turn records."""
    rows = []
    for term in terms:
        values = [v for t in turns if (v := t.metric(term.key)) is not None]
        # decode_p5: 95% of turns decode at least this fast; ttft_p95: 95% start by this
        observed = percentile(values, term.q)
        rows.append(TermJudgement(term=term.name, metric=term.metric, q=term.q,
                                  threshold=term.threshold, observed=observed,
                                  met=term.meets(observed),
                                  turns_meeting=sum(term.meets(t.metric(term.key))
                                                    for t in turns)))
    good = sum(all(term.meets(t.metric(term.key)) for term in terms) for t in turns)
    return SloJudgement(slo=",".join(t.name for t in terms), terms=rows, turns=len(turns),
                        good_turns=good, goodput=good / len(turns) if turns else None,
                        met=bool(turns) and all(r.met for r in rows))
