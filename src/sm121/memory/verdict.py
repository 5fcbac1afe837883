"""An agents run's verdict: met, or which resource the engine's own counters say it ran out of.

From the run's /metrics deltas (preemptions, prefix-cache hits and queries), its peaks (KV
usage, waiting and running requests), the client's per-turn reuse and re-prefilled tokens, the
judged turns that missed the SLO during the long prefill, the goodput, and the capacity model's
prediction for that N. The order of the checks is the order of the evidence's strength:
- KV: preemptions, or prefix reuse well under what it would be when nothing is evicted (an
  idle session's prefix was evicted: its turn re-prefilled its whole context). Each judged
  turn is held to its own expectation (turn_expected_reuse: its previous prompt in whole
  blocks), so a turn that appends a large tool result to a short context, and so reuses
  little, is not read as an eviction;
- admission during the long prefill: most misses fell inside the long job's prefill window;
- sequences: requests waited while max-num-seqs were running;
- else the step budget: the agents' own turns queued in a full engine.
Whatever it names, the line says what each judged miss met (MissCause): a resource names the
run's limit, not every miss's; the cold start (the sessions' first prompts at once) is a
resource the prediction counts only where a fresh-prompt rate is given (memory/cold_start.py),
so the verdict names it per miss, not as the run's limit.
Pure, no I/O; bench reads the numbers and prints the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from sm121.memory.capacity import Capacity
from sm121.memory.capacity_types import Resource
from sm121.memory.goodput import GOODPUT_TARGET

REUSE_DROP = 0.10  # mean reuse this far under the expected one: prefixes were evicted
TURN_REUSE_DROP = 0.25  # one turn's reuse this far under its own: part of a prefix was evicted


class MissCause(StrEnum):
    """What one judged turn over the SLO met, the first that applies, in this order."""

    EVICTED = "evicted"  # it re-prefilled an evicted prefix (lost_prefix)
    LONG_PREFILL = "long prefill"  # sent inside the long job's prefill window
    # sent before the long job, or without one while a session's first turn ran: it queued
    # behind the sessions' cold first prompts, all sent at once
    COLD_START = "cold start"
    QUEUED = "queued"  # none of those: a full engine


# how the line says each cause, after its count
_MISS_PHRASES = {
    MissCause.EVICTED: "on evicted turns",
    MissCause.LONG_PREFILL: "inside the long prefill's window",
    MissCause.COLD_START: "in the cold start (turns queued behind the sessions' first prompts)",
    MissCause.QUEUED: "queued in a full engine",
}


def lost_prefix(reuse: float, expected: float) -> bool:
    """One turn reused so much less than it would with nothing evicted that part of its
    prefix was evicted (TURN_REUSE_DROP)."""
    return reuse < expected - TURN_REUSE_DROP


@dataclass(frozen=True)
class RunEvidence:
    """What one run showed; None where it was not measured."""

    agents: int
    goodput: float | None
    preemptions: int | None = None  # vllm num_preemptions delta over the run
    prefix_hits: int | None = None  # prefix-cache hits delta (tokens)
    prefix_queries: int | None = None  # prefix-cache queries delta (tokens)
    reuse_mean: float | None = None  # the client's cached/prompt after the first turn, mean
    reuse_min: float | None = None
    # what those turns reuse when nothing is evicted, mean: each turn's own expectation
    # (turn_expected_reuse), else the workload's (expected_reuse)
    expected_reuse: float | None = None
    # the judged turn whose reuse fell furthest under its own expectation: its reuse and that
    # expectation (None: not known per turn; reuse_min is then held to expected_reuse)
    worst_turn_reuse: float | None = None
    worst_turn_expected: float | None = None
    kv_usage_peak: float | None = None  # 0..1
    waiting_peak: int | None = None
    running_peak: int | None = None
    max_num_seqs: int | None = None
    reprefill_per_turn: float | None = None  # judged turns' prompt - cached tokens, mean
    # what a turn prefills when its prefix is cached, mean (the turns' own, else the workload's)
    turn_new_tokens: float | None = None
    misses: int | None = None  # judged turns over the SLO
    misses_during_long: int | None = None  # of those, inside the long prefill's window
    # the misses by what each met first (MissCause's order; a count per cause present)
    miss_causes: Mapping[MissCause, int] | None = None


@dataclass(frozen=True)
class Verdict:
    met: bool | None  # None: not judged
    resource: Resource | None  # the resource the evidence names (None: met or not known)
    line: str
    predicted: int | None = None
    predicted_binding: Resource | None = None

    def agrees(self, agents: int) -> bool | None:
        """The run agrees with the prediction: met at or below it, missed past it."""
        if self.met is None or self.predicted is None:
            return None
        return self.met == (agents <= self.predicted)


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def evicted(e: RunEvidence) -> str | None:
    """The KV evidence, said as it will be printed; None when there is none."""
    signs: list[str] = []
    expected = e.expected_reuse if e.expected_reuse is not None else 0.95
    turn, turn_expected = ((e.worst_turn_reuse, e.worst_turn_expected)
                           if e.worst_turn_expected is not None else (e.reuse_min, expected))
    if e.reuse_mean is not None and e.reuse_mean < expected - REUSE_DROP:
        signs.append(f"reuse fell to {_pct(e.reuse_mean)} (expected {_pct(expected)})")
    elif turn is not None and lost_prefix(turn, turn_expected):
        # the tail of an idle session's prefix goes first (vLLM frees a request's blocks
        # last-first), so a small overflow shows as turns that lost part of their prefix
        signs.append(f"a turn's reuse fell to {_pct(turn)} (expected {_pct(turn_expected)})")
    elif (e.reprefill_per_turn is not None and e.turn_new_tokens
          and e.reprefill_per_turn > 2 * e.turn_new_tokens):
        signs.append(f"{e.reprefill_per_turn:,.0f} tokens re-prefilled a turn "
                     f"(a cached turn adds {e.turn_new_tokens:,.0f})")
    if e.preemptions:
        signs.append(f"{e.preemptions} preemption{'s' if e.preemptions != 1 else ''}")
    if not signs:
        return None
    if e.kv_usage_peak is not None:
        signs.append(f"KV usage peak {e.kv_usage_peak:.2f}")
    return "evictions: " + ", ".join(signs)


def miss_breakdown(causes: Mapping[MissCause, int] | None, met: bool) -> str | None:
    """The misses by cause, as the line says them (None: no miss, or not classified):
    missed, `misses: 1 of 4 on evicted turns, 3 in the cold start (...)`; met, `2 misses in
    the cold start (...)`."""
    counts = [(c, causes[c]) for c in MissCause if causes and causes.get(c)]
    if not counts:
        return None
    total = sum(n for _, n in counts)
    parts = [f"{n} {_MISS_PHRASES[c]}" for c, n in counts]
    if not met:
        first, n = counts[0]
        parts[0] = f"{n} of {total} {_MISS_PHRASES[first]}"
        return "misses: " + ", ".join(parts)
    if len(parts) == 1:
        return f"{total} miss{'es' if total != 1 else ''} {_MISS_PHRASES[counts[0][0]]}"
    return f"{total} misses: " + ", ".join(parts)


def judge(evidence: RunEvidence, prediction: Capacity | None = None,
          target: float = GOODPUT_TARGET) -> Verdict:
    """The run's verdict line: "met", or "missed: <resource> (<evidence>)"."""
    e = evidence
    predicted = None if prediction is None else prediction.predicted
    binding = None if prediction is None else prediction.binding
    bound = "at most " if prediction is not None and prediction.unknown else ""
    pred = "" if predicted is None or binding is None else (
        f"; predicted {bound}{predicted} ({binding.value} binds)")

    def verdict(met: bool | None, resource: Resource | None, line: str) -> Verdict:
        return Verdict(met, resource, line, predicted, binding)

    if e.goodput is None:
        return verdict(None, None, f"not judged (no goodput){pred}")
    kv = evicted(e)
    if e.goodput >= target:
        said = "; ".join(s for s in (kv, miss_breakdown(e.miss_causes, True)) if s)
        note = f" ({said}, within the SLO)" if said else ""
        return verdict(True, None, f"met at {e.agents}: goodput {_pct(e.goodput)}{note}{pred}")
    causes = miss_breakdown(e.miss_causes, False)
    head = f"missed at {e.agents}: goodput {_pct(e.goodput)}{f'; {causes}' if causes else ''}"
    if kv:
        return verdict(False, Resource.KV, f"missed: KV ({kv}); {head}{pred}")
    if e.misses and e.misses_during_long is not None and 2 * e.misses_during_long >= e.misses:
        return verdict(False, Resource.ADMISSION, (
            f"missed: admission during the long prefill ({e.misses_during_long} of {e.misses} "
            f"misses inside its window); {head}{pred}"))
    if (e.waiting_peak and e.max_num_seqs is not None and e.running_peak is not None
            and e.running_peak >= e.max_num_seqs):
        return verdict(False, Resource.SEQUENCES, (
            f"missed: sequences ({e.waiting_peak} waiting while max-num-seqs {e.max_num_seqs} "
            f"ran); {head}{pred}"))
    if e.preemptions is None and e.reuse_mean is None:
        return verdict(False, None, f"missed: cause not known (no engine counters); {head}{pred}")
    if e.waiting_peak and e.max_num_seqs is None:
        # requests waited, but the limit they may have waited for is not known to the run
        return verdict(False, Resource.STEP_BUDGET, (
            f"missed: step budget (no evictions; {e.waiting_peak} waiting while "
            f"{e.running_peak if e.running_peak is not None else '?'} ran, max-num-seqs not "
            f"known: sequences not ruled out); {head}{pred}"))
    return verdict(False, Resource.STEP_BUDGET, (
        f"missed: step budget (no evictions, no sequence limit: the turns queued in a full "
        f"engine); {head}{pred}"))


def expected_reuse(first_prompt_tokens: float, growth_per_turn: float, turn_new_tokens: float,
                   turns: int, block_size: int) -> float | None:
    """Mean prefix reuse of the turns after the first when nothing is evicted: each turn's
    cached prefix is its prompt less what the turn adds, rounded down to whole blocks."""
    if turns < 2:
        return None
    shares = []
    for turn in range(1, turns):
        prompt = first_prompt_tokens + turn * growth_per_turn
        cached = (prompt - turn_new_tokens) // block_size * block_size
        shares.append(max(0.0, cached / prompt))
    return sum(shares) / len(shares)


def turn_expected_reuse(prompt_tokens: int, previous_prompt_tokens: int,
                        block_size: int) -> float | None:
    """What one turn reuses when nothing is evicted: its session's previous prompt in whole
    blocks, at most its own prompt less the token the engine computes (vLLM matches whole
    blocks and computes at least a prompt's last token), over its prompt.

    Not the previous reply's blocks: vLLM caches them, but the chat template re-renders the
    reply and its tokens need not match the generated ones. In the committed H100 and H200
    runs (docs/results/gpu-h100/capacity, gpu-h200/tune-capacity) every turn of the runs
    that met, and of those whose misses were not KV, reused its previous prompt's blocks
    exactly, or those and some or all of its reply's; turns under that came only in the runs
    the KV checks name."""
    if prompt_tokens <= 0 or block_size <= 0:
        return None
    cached = min(previous_prompt_tokens // block_size, (prompt_tokens - 1) // block_size)
    return max(0, cached) * block_size / prompt_tokens
