"""What a one-shot long job's window costs the agents' SLO (docs/capacity.md, "The long job's
window").

While a long background prefill runs, its blocks grow by one threshold chunk a step. Once the
sessions' contexts and the job's blocks together outgrow the pool, the engine evicts the
least recently used idle prefixes. Agents return in a cycle, so the least recently used session
is the next to return: from then on each returning turn finds its prefix gone, re-prefills it
and evicts the next one, until the job's blocks are freed. The model counts those turns:

- the deficit at the job's end: D = N x (a session's context then) + job - pool;
- a returning turn misses the SLO when it re-prefills more than R_slo = SLO x r / 2 tokens: it
  runs one threshold chunk a step in steps that also carry one of the job's chunks, both
  priced at r, the job's prefill rate at its own depth under that threshold;
- the deficit grows by one chunk a step, and a session returns once every c = reply + think /
  (chunk / r) steps (each running sequence decodes one token a step): so about
  N x min(job, D - R_slo) / (chunk x c) judged turns miss.

It leaves out that stuck turns return later (fewer misses) and that the least recently used
order keeps evicting for one think time after the job ends (more): on the H100 and H200 runs
these two roughly cancelled (benchmarks/long_job_window.py prints each run). Plain numbers in,
no I/O; the caller reads the workload and the rate (memory/ may not import bench/).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sm121.memory.goodput import GOODPUT_TARGET, goodput_of


@dataclass(frozen=True)
class JobRate:
    """The long job's prefill rate at its own depth under the threshold that caps its steps:
    a calibration figure, said with its stack ("measured on ..." or "assumed from ...")."""

    tok_s: float
    source: str


@dataclass(frozen=True)
class WindowInputs:
    """A session and the long job as plain numbers."""

    pool_tokens: int
    job_tokens: int
    context_tokens: float  # a session's context when the job's prefill ends
    threshold: int  # the job's chunk a step (long-prefill-token-threshold)
    reply_tokens: float  # a turn's reply, mean
    think_time_s: float  # between a reply and the next turn, mean
    judged_turns: int  # judged turns per session (turns from the SLO's first one)
    slo_ttft_s: float
    rate: JobRate
    goodput_target: float = GOODPUT_TARGET

    @property
    def step_s(self) -> float:
        """One step while the job runs: its chunk at its depth."""
        return self.threshold / self.rate.tok_s

    @property
    def cycle_steps(self) -> float:
        """Steps between a session's turns while the job runs."""
        return self.reply_tokens + self.think_time_s / self.step_s

    @property
    def reprefill_within_slo(self) -> float:
        """R_slo: the most a returning turn re-prefills beside the job within the SLO."""
        return self.slo_ttft_s * self.rate.tok_s / 2

    @property
    def allowed_share(self) -> float:
        return 1 - self.goodput_target


@dataclass(frozen=True)
class WindowCost:
    agents: int
    deficit_tokens: float  # D; <= 0: the job's window evicts nothing
    misses: float  # judged turns over the SLO the window costs
    judged: int
    met: bool  # the window alone leaves goodput at or above the target

    @property
    def goodput(self) -> float:
        return goodput_of(self.misses, self.judged)


def evicts_past(w: WindowInputs) -> int:
    """The most agents whose contexts fit beside the whole job: past it the window evicts."""
    return max(0, math.floor((w.pool_tokens - w.job_tokens) / w.context_tokens))


def cost(w: WindowInputs, agents: int) -> WindowCost:
    """The judged turns over the SLO that the job's window costs `agents` sessions."""
    deficit = agents * w.context_tokens + w.job_tokens - w.pool_tokens
    over = min(w.job_tokens, deficit - w.reprefill_within_slo)
    misses = 0.0
    if w.context_tokens > w.reprefill_within_slo and over > 0:
        misses = agents * over / (w.threshold * w.cycle_steps)
    judged = agents * w.judged_turns
    return WindowCost(agents, deficit, misses, judged,
                      met=misses <= w.allowed_share * judged + 1e-9)


def binds_from(w: WindowInputs) -> int | None:
    """The fewest agents whose window alone misses the goodput target; None: no number does
    (a whole re-prefill fits the SLO, or the window is too short to cost the target's share).

    The share missed, min(job, D - R_slo) / (chunk x c x judged turns), grows with N, so the
    bound is where D - R_slo first exceeds (1 - target) x chunk x c x judged turns."""
    need = w.allowed_share * w.threshold * w.cycle_steps * w.judged_turns
    if w.context_tokens <= w.reprefill_within_slo or need >= w.job_tokens or w.judged_turns < 1:
        return None
    n = math.floor((w.pool_tokens - w.job_tokens + w.reprefill_within_slo + need)
                   / w.context_tokens) + 1
    while n > 1 and not cost(w, n - 1).met:  # float rounding at the edge
        n -= 1
    while cost(w, n).met:
        n += 1
    return n


def describe(w: WindowInputs, context_note: str) -> tuple[str, str]:
    """Where the window evicts, and the arithmetic of what an evicted turn costs."""
    where = (f"past {evicts_past(w)} agents the {w.job_tokens:,}-token job evicts idle "
             f"prefixes ({w.context_tokens:,.0f} tokens a session at its end, {context_note})")
    arithmetic = (f"a turn evicted by more than {w.reprefill_within_slo:,.0f} tokens misses "
                  f"{w.slo_ttft_s:g} s (it re-prefills {w.threshold:,} a step beside the job's "
                  f"{w.threshold:,}, both at {w.rate.tok_s:,.0f} tok/s, {w.rate.source}); an "
                  f"agent returns every {w.cycle_steps:,.0f} steps (a {w.reply_tokens:,.0f}-token "
                  f"reply, {w.think_time_s:g} s think at {1000 * w.step_s:.0f} ms a step)")
    return where, arithmetic
