"""Candidates from the knee (pure): the recipe's own profiles as measured baselines, then
profiles derived around the prefill knee K and the decode saturation batch S, then the
engine version's own scheduler options. The order is the priority: `--budget` keeps the
first ones that fit.

Derived, on top of the base profile (the recipe's default):
- `t-lpt-K`: the base chunk (twice the knee when the knee is not below it) with the
  long-prefill threshold at the knee: a long prefill runs
  in steps of K tokens (within 5% of peak, by the knee's definition) and a short request waits
  about one such step, not the whole prefill;
- `t-lpt-K-seqs-S`: the same with max-num-seqs at the decode saturation batch (when above
  the base's);
- `t-lpt-K/2`: half the knee: shorter waits, bought with prefill rate below the knee;
- version options: vLLM's adaptive threshold (0.32) or partial prefills (0.21), with the
  threshold at K;
- `t-chunk-2K-lpt-K`: a larger step budget, so decodes and short prefills share a step with
  the long prefill's K tokens.
Every candidate holds at least agents + 1 sequences (the agents and the background job)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sm121.bench.tune.knobs import effective_step
from sm121.engines.adapter import SchedulerFlags
from sm121.recipes.schema import ArgValue

MIN_STEP = 128


@dataclass(frozen=True)
class Candidate:
    name: str
    base: str  # the recipe profile it starts from
    args: dict[str, ArgValue] = field(default_factory=dict)  # on top of the base profile
    why: str = ""
    source: str = "knee"  # recipe | knee | decode | engine option

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "base": self.base, "args": dict(self.args), "why": self.why,
                "source": self.source}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Candidate:
        return Candidate(data["name"], data["base"], dict(data.get("args") or {}),
                         data.get("why", ""), data.get("source", "knee"))


def _int(value: object, default: int) -> int:
    return int(value) if isinstance(value, int | str) and str(value).isdigit() else default


def derive(knee_step: int | None, saturation_batch: int | None, base: str,
           base_args: dict[str, ArgValue], baselines: dict[str, dict[str, ArgValue]],
           agents: int, flags: frozenset[str], knobs: SchedulerFlags) -> list[Candidate]:
    """All candidates in priority order. `baselines`: recipe profile -> its merged args;
    `knobs`: the engine's names for the scheduler flags; `flags`: its version's flags."""
    CHUNK, SEQS, THRESHOLD = knobs.batched_tokens, knobs.max_num_seqs, \
        knobs.long_prefill_threshold
    ADAPTIVE, PARTIAL, LONG_PARTIAL = knobs.adaptive_threshold, knobs.partial_prefills, \
        knobs.long_partial_prefills
    chunk = _int(base_args.get(CHUNK), 2048)
    seqs = max(_int(base_args.get(SEQS), 1), agents + 1)
    found = [Candidate(name, name, {}, f"the recipe's profile {name} as it is "
                       f"(step {effective_step(dict(args), knobs)})", "recipe")
             for name, args in baselines.items()]
    if knee_step is None:
        return found
    k = max(MIN_STEP, knee_step)
    # A threshold needs room beside it in the step: with the knee at or above the base chunk
    # the step budget becomes twice the knee.
    big = chunk if k < chunk else 2 * k
    derived: list[Candidate] = []

    def add(name: str, args: dict[str, ArgValue], why: str, source: str = "knee") -> None:
        merged = {CHUNK: big, SEQS: seqs, **args}
        if merged.get(THRESHOLD) is not None and int(str(merged[THRESHOLD])) >= \
                int(str(merged[CHUNK])):
            merged.pop(THRESHOLD)  # a threshold at or above the chunk changes nothing
        derived.append(Candidate(name, base, merged, why, source))

    add(f"t-lpt-{k}", {THRESHOLD: k},
        f"long prefills in steps of the knee ({k} tokens, within 5% of the peak rate)")
    if saturation_batch and saturation_batch > seqs:
        add(f"t-lpt-{k}-seqs-{saturation_batch}", {THRESHOLD: k, SEQS: saturation_batch},
            f"the knee's threshold, and max-num-seqs at the decode saturation batch "
            f"({saturation_batch})", "decode")
    if k // 2 >= MIN_STEP:
        add(f"t-lpt-{k // 2}", {THRESHOLD: k // 2},
            f"half the knee ({k // 2} tokens): shorter admission waits, prefill below the knee")
    if ADAPTIVE and ADAPTIVE in flags:
        add(f"t-lpt-{k}-adaptive", {THRESHOLD: k, ADAPTIVE: True},
            f"the knee's threshold, adapted by the engine to its load (--{ADAPTIVE})",
            "engine option")
    if PARTIAL and LONG_PARTIAL and PARTIAL in flags and LONG_PARTIAL in flags:
        add(f"t-lpt-{k}-partial-2", {THRESHOLD: k, PARTIAL: 2, LONG_PARTIAL: 1},
            "the knee's threshold with two concurrent partial prefills, one of them long "
            f"(--{PARTIAL})", "engine option")
    add(f"t-chunk-{2 * big}-lpt-{k}", {CHUNK: 2 * big, THRESHOLD: k},
        f"a {2 * big}-token step budget: decodes and short prefills beside the long "
        f"prefill's {k} tokens")
    names = {c.name for c in found}
    return found + [c for c in derived if c.name not in names]
