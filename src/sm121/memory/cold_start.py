"""What the cold start costs the agents' SLO (docs/capacity.md, "The cold start").

At t=0 every session sends its first prompt (system prompt, tools, task) at once. vLLM V1
schedules its running requests first and admits waiting ones, in the order they arrived, only
with what is left of the step; so the first prompts prefill `c` at a time (c = step budget /
threshold where a long-prefill threshold under the step budget caps each one's chunk; else
one at a time, each taking whole steps), and every step carries a full budget of prefill. A
session's second turn arrives behind all the first prompts still waiting: it is admitted only
once the last of them has started and a place frees, when the (N - c + 1)-th first prompt
completes (the release). The model:

- the first prompts complete in groups of c, one group every g = c x (first prompt - shared
  tokens) / r seconds (r: the engine's prefill rate for fresh prompts of about that length at
  this step budget, a calibration figure); the k-th completes at C_k = ceil(k / c) x g, the
  last (the cold start's duration T_cold) at C_N, the release at T_rel = C_(N - c + 1);
- a step lasts s = budget / r while the cold start fills every step, so session k sends its
  second turn at C_k + y s + h (y its first reply's tokens, h its think time);
- it waits until T_rel and gets its first token one step later: it misses the SLO when it was
  sent before T_rel + s - SLO. Replies and think times are uniform over the workload's
  ranges, so the expected misses are the sum over sessions of P(y s + h < T_rel + s - SLO -
  C_k); none where the SLO does not judge the second turn;
- the cold start binds from the fewest agents whose misses leave goodput under the target.

It leaves out, each for its size: the second turns' own queue once released (a few hundred
tokens each: a step or a few), the decoding sequences' token a step out of the budget (at most
N of thousands), third turns that could still meet
the cold start (a second turn admitted at the release ends after it), max-num-seqs under N (the
sequences resource counts it) and what a shared prefix saves beyond its tokens (the presets
share none: `bench agents` salts each session's system prompt at its start).
benchmarks/cold_start.py sets it beside every committed agents run: within a miss or two where
the cold start costs the target (the H200 at 28 and 40 agents), under by up to 2.3 misses at
16-19 agents on 2048-token steps, where the measured cold start ran longer than the knee's
rate says. Plain numbers in, no I/O; the caller reads the workload and the rate (memory/ may
not import bench/).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sm121.memory.goodput import GOODPUT_TARGET, goodput_of

MOST_AGENTS = 100_000  # binds_from looks no further


@dataclass(frozen=True)
class FreshRate:
    """The engine's prefill rate for fresh prompts of about the first prompt's length at the
    profile's step budget: a calibration figure, said with its stack ("measured on ..." or
    "assumed from ...")."""

    tok_s: float
    source: str


@dataclass(frozen=True)
class ColdStartInputs:
    """The sessions' first prompts, the profile's steps and the workload's turns as plain
    numbers."""

    first_prompt_tokens: float  # a session's first prompt, as the engine counts it
    shared_tokens: float  # of it, what every session's first prompt shares (computed once)
    step_budget: int  # max-num-batched-tokens
    threshold: int | None  # long-prefill-token-threshold; None or 0: none
    reply_tokens: tuple[float, float]  # a turn's reply, uniform between these
    think_time_s: tuple[float, float]  # between a reply and the next turn, uniform
    slo_ttft_s: float
    judged_turns: int  # judged turns per session
    second_turn_judged: bool  # the SLO judges a session's second turn (slo_from_turn <= 1)
    rate: FreshRate
    goodput_target: float = GOODPUT_TARGET

    @property
    def slots(self) -> int:
        """First prompts that prefill at once: the threshold caps each one's chunk of a step
        where it is under the budget; else one takes whole steps."""
        t = self.threshold or 0
        return max(1, self.step_budget // t) if 0 < t < self.step_budget else 1

    @property
    def fresh_tokens(self) -> float:
        return max(0.0, self.first_prompt_tokens - self.shared_tokens)

    @property
    def step_s(self) -> float:
        """One step while the first prompts fill the budget."""
        return self.step_budget / self.rate.tok_s

    @property
    def group_s(self) -> float:
        """Between two groups of `slots` first prompts completing."""
        return self.slots * self.fresh_tokens / self.rate.tok_s

    def completes(self, k: int) -> float:
        """When the k-th first prompt (1-based, in completion order) gets its first token."""
        return math.ceil(k / self.slots) * self.group_s

    def duration(self, agents: int) -> float:
        """T_cold: the last first prompt's first token."""
        return self.completes(agents) if agents > 0 else 0.0

    def release(self, agents: int) -> float:
        """T_rel: when a second turn is first admitted (the last first prompt has started and a
        place frees); 0 where every first prompt starts at once."""
        k = agents - self.slots + 1
        return self.completes(k) if k > 1 else 0.0

    @property
    def allowed_share(self) -> float:
        return 1 - self.goodput_target


@dataclass(frozen=True)
class ColdStartCost:
    agents: int
    duration_s: float  # T_cold
    release_s: float  # T_rel
    misses: float  # judged turns over the SLO the cold start costs (expected)
    judged: int
    met: bool  # the cold start alone leaves goodput at or above the target

    @property
    def goodput(self) -> float:
        return goodput_of(self.misses, self.judged)


def _below(x: float, lo: float, hi: float) -> float:
    """The integral over (-inf, x] of P(U <= u), U uniform on [lo, hi] (a point where lo ==
    hi): the antiderivative the sum of two uniforms' CDF is made of."""
    if x <= lo:
        return 0.0
    if x >= hi:
        return (hi - lo) / 2 + (x - hi)
    return (x - lo) ** 2 / (2 * (hi - lo))


def sum_below(x: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    """P(A + B < x) for A uniform on `a` and B on `b` (either may be a point)."""
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    if b_hi <= b_lo:  # B is a point
        z = x - b_lo
        if a_hi <= a_lo:
            return 1.0 if z > a_lo else 0.0
        return min(1.0, max(0.0, (z - a_lo) / (a_hi - a_lo)))
    if a_hi <= a_lo:
        return sum_below(x, b, a)
    share = (_below(x - b_lo, a_lo, a_hi) - _below(x - b_hi, a_lo, a_hi)) / (b_hi - b_lo)
    return min(1.0, max(0.0, share))


def cost(w: ColdStartInputs, agents: int) -> ColdStartCost:
    """The judged turns over the SLO the cold start costs `agents` sessions (expected)."""
    release = w.release(agents)
    judged = agents * w.judged_turns
    misses = 0.0
    if w.second_turn_judged and release > 0:
        reply = (w.reply_tokens[0] * w.step_s, w.reply_tokens[1] * w.step_s)
        groups = math.ceil(agents / w.slots)
        for group in range(1, groups + 1):
            sessions = min(w.slots, agents - (group - 1) * w.slots)
            slack = release + w.step_s - w.slo_ttft_s - group * w.group_s
            misses += sessions * sum_below(slack, reply, w.think_time_s)
    return ColdStartCost(agents, w.duration(agents), release, misses, judged,
                         met=misses <= w.allowed_share * judged + 1e-9)


def _first_possible(w: ColdStartInputs) -> int:
    """The fewest agents whose earliest second turn could meet a release late enough to miss:
    below it no second turn waits past the SLO."""
    need = w.slo_ttft_s - w.step_s + w.reply_tokens[0] * w.step_s + w.think_time_s[0]
    if w.group_s <= 0:
        return MOST_AGENTS
    # release - C_1 = (ceil((N - c + 1) / c) - 1) x g must exceed `need`
    groups = max(0, math.floor(need / w.group_s)) + 2
    return max(1, (groups - 1) * w.slots + w.slots)


def binds_from(w: ColdStartInputs) -> int | None:
    """The fewest agents whose cold start alone leaves goodput under the target; None where no
    number does (the SLO does not judge the second turn, or every second turn missing would
    still meet the target) or none up to MOST_AGENTS does."""
    if (not w.second_turn_judged or w.judged_turns < 1 or w.fresh_tokens <= 0
            or 1 / w.judged_turns <= w.allowed_share):
        return None
    n = max(1, _first_possible(w) - w.slots)  # a margin under the closed-form edge
    while n <= MOST_AGENTS:
        if not cost(w, n).met:
            return n
        n += 1
    return None


def describe(w: ColdStartInputs, agents: int | None = None) -> str:
    """The arithmetic in words: how the first prompts prefill, when a second turn is admitted,
    which second turns miss, and (`agents`) what that costs."""
    shared = (f", {w.shared_tokens:,.0f} of them shared" if w.shared_tokens
              else ", none shared: each session's system prompt is its own")
    how = (f"{w.slots} at a time (threshold {w.threshold:,} of a {w.step_budget:,}-token step)"
           if w.slots > 1 else f"one at a time in whole {w.step_budget:,}-token steps")
    text = (f"every session's first prompt ({w.first_prompt_tokens:,.0f} tokens{shared}) is "
            f"sent at once and prefills {how} at {w.rate.tok_s:,.0f} tok/s ({w.rate.source}): "
            f"a group every {w.group_s:.2f} s; a second turn is admitted once the last first "
            f"prompt has started and a place frees, and goes out a "
            f"{w.reply_tokens[0]:g}-{w.reply_tokens[1]:g}-token first reply "
            f"({1000 * w.step_s:.0f} ms a step) and {w.think_time_s[0]:g}-"
            f"{w.think_time_s[1]:g} s of think after its first prompt's first token; one that "
            f"waits over {w.slo_ttft_s:g} s misses")
    if not w.second_turn_judged:
        return text + "; the SLO does not judge the second turn"
    if agents is not None:
        c = cost(w, agents)
        text += (f"; at {agents}: the last first prompt done at {c.duration_s:.1f} s, second "
                 f"turns admitted from {c.release_s:.1f} s, about {c.misses:.1f} of {c.judged} "
                 f"judged turns over the SLO (goodput {c.goodput:.0%})")
    return text
