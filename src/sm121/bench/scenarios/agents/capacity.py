"""The capacity model's view of an agents run: the workload's numbers for the prediction
(memory/capacity.py takes plain numbers: memory/ may not import bench/), the run's evidence
(its judged turns' reuse and re-prefilled tokens, the /metrics deltas, the engine's gauges'
peaks, the misses by what each met: an evicted prefix, the long job's prefill window, the
cold start) and the verdict line every agents run prints (docs/capacity.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sm121.bench.scenarios.agents.models import (
    AgentsRun,
    AgentsSummary,
    CapacityVerdict,
    TurnSample,
    WorkloadRef,
)
from sm121.bench.scenarios.agents.reused import reports_cached, turn_cached, turn_reused
from sm121.bench.scenarios.agents.slo import parse_slo
from sm121.bench.scenarios.agents.summary import summarize_run
from sm121.bench.scenarios.agents.workload import (
    TEMPLATE_MARGIN,
    Workload,
    fit_to_server,
    load_workload,
)
from sm121.bench.server import preemptions, prefix_counts
from sm121.engines.adapter import SchedulerFlags
from sm121.engines.client import block_size_of, kv_pool_of
from sm121.memory.capacity import Capacity, predict
from sm121.memory.capacity_types import Knobs, Pool, SessionShape
from sm121.memory.verdict import (
    MissCause,
    RunEvidence,
    Verdict,
    expected_reuse,
    judge,
    lost_prefix,
    turn_expected_reuse,
)

# Where no engine counted the first prompt: the longest session `fit` sizes to max-model-len
# (every turn at its largest), said in every prediction. The expected session from the nominal
# sizes would undercount (the chat template renders the tools larger: 17,747 tokens against
# 15,264 on the H100 sitting) and over-predict (21 agents of coding-agent-with-batch on the
# H100's pool, where 18 missed): an over-prediction collapses every agent, so the bound without
# an engine errs low (19 there; long-session 6 where 8 met, docs/results/gpu-h100/capacity).
NOMINAL_PREFIX = ("the longest session (every turn at its largest; no engine counted the first "
                  "prompt, whose tools the template renders larger)")
RENDERED_PREFIX = "as the engine's /tokenize renders it (system prompt, tools, task)"
RUN_PREFIX = ("as the engine counted the run's first turns (a turn's template tokens: the "
              f"margin, {TEMPLATE_MARGIN})")


def session_shape(w: Workload, turns: int, first_prompt_tokens: int | None = None,
                  prefix_source: str | None = None,
                  turn_template_tokens: int | None = None) -> SessionShape:
    """A fitted workload (`fit`) as the capacity model's numbers, for a run of `turns` turns:
    the working set is the expected session where an engine counted its first prompt (then
    mean turns, whose template tokens it counted, else the margin), else the longest one `fit`
    sizes to max-model-len (NOMINAL_PREFIX says why)."""
    if w.fitted is None:
        raise ValueError("session_shape needs a fitted workload (workload.fit)")
    reply = w.mean_reply_tokens()
    template = TEMPLATE_MARGIN if turn_template_tokens is None else turn_template_tokens
    if first_prompt_tokens is None:
        last, growth = w.fitted.conversation_tokens_max, w.per_turn_tokens()
    else:
        last = math.ceil(w.expected_context(turns, first_prompt_tokens, template))
        growth = w.mean_turn_tokens(template)
    return SessionShape(
        workload=w.name, turns=turns, last_context_tokens=last, growth_per_turn_tokens=growth,
        # a cached turn prefills its new input, the template, and the previous reply as the
        # chat template re-renders it (its generated blocks may not match token for token)
        turn_new_tokens=w.mean_turn_tokens(template), reply_tokens=reply,
        think_time_s=(w.think_time_s.min + w.think_time_s.max) / 2,
        long_job_tokens=w.fitted.background_tokens, first_prompt_tokens=first_prompt_tokens,
        prefix_source=prefix_source if first_prompt_tokens is not None
        or (prefix_source or "").startswith(NOMINAL_PREFIX) else NOMINAL_PREFIX,
        slo_from_turn=w.slo_from_turn,
        reply_range=(w.output_tokens.min, w.output_tokens.max),
        think_range=(w.think_time_s.min, w.think_time_s.max))


def knobs_from_args(args: Mapping[str, Any], flags: SchedulerFlags,
                    kv_dtype_flag: str | None = None) -> Knobs:
    """A rendered profile's scheduler settings, by the engine's names for them."""
    def number(name: str | None) -> int | None:
        value = args.get(name) if name is not None else None
        return int(value) if isinstance(value, int | str) and str(value).isdigit() else None

    dtype = args.get(kv_dtype_flag) if kv_dtype_flag else None
    return Knobs(max_num_seqs=number(flags.max_num_seqs), step_budget=number(flags.batched_tokens),
                 long_prefill_threshold=number(flags.long_prefill_threshold),
                 kv_dtype=str(dtype) if dtype else None)


def load_shape(workload: str, turns: int, max_model_len: int,
               first_prompt_tokens: int | None = None, prefix_source: str = RENDERED_PREFIX,
               turn_template_tokens: int | None = None) -> SessionShape:
    """A preset (or YAML file) fitted to the server as a run of `turns` turns sends it; its
    first prompt and a turn's template tokens as an engine counted them
    (first_prompt.rendered_session), else nominal."""
    return session_shape(fit_to_server(load_workload(workload), max_model_len, turns), turns,
                         first_prompt_tokens, prefix_source, turn_template_tokens)


def nominal_prefix(workload: str, turns: int, max_model_len: int) -> int:
    """A preset's (or YAML file's) system prompt, task and tools fitted as a run of `turns`
    turns sends it, in its nominal sizes: what an engine's count of the first prompt was
    made at (a count holds where the fit gives the same sizes)."""
    return fit_to_server(load_workload(workload), max_model_len, turns).prefix_tokens()


def first_turn_prompt(run: AgentsRun) -> int | None:
    """The sessions' first prompts as the engine counted them (the mean of turn 0's
    prompt_tokens), None where the run recorded none."""
    counted = [t.prompt_tokens for t in run.turns if t.turn == 0 and t.prompt_tokens]
    return round(sum(counted) / len(counted)) if counted else None


def shape_reuse(shape: SessionShape, block_size: int) -> float | None:
    """What the judged turns reuse when nothing is evicted (block rounding only)."""
    first = shape.first_prompt_tokens if shape.first_prompt_tokens is not None else \
        shape.last_context_tokens - shape.turns * shape.growth_per_turn_tokens
    return expected_reuse(first, shape.growth_per_turn_tokens, shape.turn_new_tokens,
                          shape.turns, block_size)


def slo_ttft(slo: str | None) -> float | None:
    """The TTFT threshold of an SLO such as ttft_p95=2s (None: no TTFT term)."""
    return next((t.threshold for t in parse_slo(slo) if t.metric == "ttft"), None)


def pool_of(cache_config: Mapping[str, Any] | None) -> Pool | None:
    """The engine's pool from its cache-config labels (engines/client.cache_config): blocks
    x block size; None when the engine does not say (older results files kept no block count)."""
    found = kv_pool_of(cache_config or {})
    if found is None:
        return None
    blocks, size = found
    return Pool(blocks * size, size, "the engine's /metrics")


def run_pool(cache_config: Mapping[str, Any] | None, given_tokens: int | None = None,
             logged_tokens: int | None = None, logged_by: str = "a boot log",
             block_size: int | None = None) -> Pool | None:
    """The pool a run is judged against: the one given (--pool-tokens) wins; else the
    engine's /metrics; else the one its boot log states (`logged_by` names it). A pool in
    tokens takes the engine's block size (its /metrics says it where it says no block
    count), else `block_size` (the profile's), else 16."""
    block = block_size_of(cache_config or {}) or block_size or 16
    if given_tokens:
        return Pool(given_tokens, block, "given (--pool-tokens)")
    return pool_of(cache_config) or (Pool(logged_tokens, block, logged_by)
                                     if logged_tokens else None)


@dataclass(frozen=True)
class TurnReuse:
    """One judged turn's reuse beside what it reuses when nothing is evicted."""

    reuse: float
    expected: float | None  # its own (turn_expected_reuse), else the workload's
    new_tokens: float | None  # what it prefills when nothing is evicted (its own numbers only)
    key: tuple[int, int, int]  # its agent, conversation and turn

    @property
    def lost_prefix(self) -> bool:
        """It re-prefilled an evicted prefix (verdict.lost_prefix, the KV check's rule)."""
        return self.expected is not None and lost_prefix(self.reuse, self.expected)


def turn_reuse(run: AgentsRun, judged: list[TurnSample], block_size: int,
               fallback: float | None) -> list[TurnReuse]:
    """Each judged turn after its session's first: what it reused (reused.turn_reused: a turn
    that reused nothing counts, at 0), and what it reuses when nothing is
    evicted, from its own prompt and its session's previous one (turn_expected_reuse), else
    `fallback` (the workload's, where the previous turn recorded no prompt)."""
    prompts = {(t.agent, t.conversation, t.turn): t.prompt_tokens for t in run.turns}
    reported = reports_cached(run.turns)
    found: list[TurnReuse] = []
    for t in judged:
        reuse = turn_reused(t, reported)
        if reuse is None or t.turn < 1:
            continue
        previous = prompts.get((t.agent, t.conversation, t.turn - 1))
        own = (turn_expected_reuse(t.prompt_tokens, previous, block_size)
               if t.prompt_tokens and previous else None)
        found.append(TurnReuse(reuse, fallback if own is None else own,
                               None if own is None or not t.prompt_tokens
                               else t.prompt_tokens * (1 - own), _key(t)))
    return found


def _key(t: TurnSample) -> tuple[int, int, int]:
    return t.agent, t.conversation, t.turn


def _waited_in(t: TurnSample, window: tuple[float, float]) -> bool:
    """The turn's wait for its first token overlapped `window` (submitted, first token)."""
    return t.submitted < window[1] and t.submitted + (t.ttft_s or 0.0) > window[0]


def miss_causes(run: AgentsRun, missed: list[TurnSample], turns: list[TurnReuse],
                window: tuple[float, float] | None) -> dict[MissCause, int]:
    """Each judged miss by the first cause it met (MissCause's order): its prefix was
    evicted; its wait overlapped the long job's prefill `window` (submitted, first token);
    it was sent before the long job's submission, or without one while a session's first
    turn ran (the cold start); else it queued in a full engine."""
    evicted = {t.key for t in turns if t.lost_prefix}
    firsts = [(_key(t), t.submitted, t.finished if t.finished is not None else t.first_token)
              for t in run.turns if t.turn == 0]
    long_sent = window[0] if window is not None else None
    found: dict[MissCause, int] = {}
    for t in missed:
        if _key(t) in evicted:
            cause = MissCause.EVICTED
        elif window is not None and _waited_in(t, window):
            cause = MissCause.LONG_PREFILL
        elif (t.submitted < long_sent if long_sent is not None else
              any(start <= t.submitted < end for key, start, end in firsts
                  if end is not None and key != _key(t))):
            cause = MissCause.COLD_START
        else:
            cause = MissCause.QUEUED
        found[cause] = found.get(cause, 0) + 1
    return found


def evidence(run: AgentsRun, summary: AgentsSummary, expected: float | None,
             turn_new: float | None, ttft_slo_s: float | None,
             max_num_seqs: int | None = None, block_size: int = 16) -> RunEvidence:
    """The run's evidence: judged turns' reuse, each beside its own expectation, and their
    re-prefilled tokens (prompt - cached) beside what they add when nothing is evicted
    (`expected` and `turn_new`: the workload's, where the turns' own are not known), the
    /metrics deltas, the judged misses and those inside the long job's prefill window."""
    judged = [t for t in run.turns if t.turn >= summary.judged_from_turn and t.ttft_s is not None]
    turns = turn_reuse(run, judged, block_size, expected)
    reuse = [t.reuse for t in turns]
    held = [t for t in turns if t.expected is not None]
    # the turn that fell furthest under its own expectation: the shortfall, not the lowest
    # reuse (a large append on a short context reuses little without any eviction)
    worst = max(held, key=lambda t: (t.expected or 0.0) - t.reuse, default=None)
    new = [t.new_tokens for t in turns if t.new_tokens is not None]
    reported = reports_cached(run.turns)
    reprefill = [t.prompt_tokens - cached for t in judged
                 if t.prompt_tokens is not None and (cached := turn_cached(t, reported)) is not None]
    misses = during = causes = None
    if ttft_slo_s is not None:
        missed = [t for t in judged if (t.ttft_s or 0.0) > ttft_slo_s]
        misses, during = len(missed), 0
        bg = summary.background
        window: tuple[float, float] | None = None
        if bg is not None and bg.submitted is not None and bg.first_token is not None:
            window = bg.submitted, bg.first_token
            during = sum(1 for t in missed if _waited_in(t, window))
        causes = miss_causes(run, missed, turns, window)
    deltas = summary.engine_metrics
    preempted = preemptions(deltas)
    hits, queries = prefix_counts(deltas)
    gauges = run.gauges if run.gauges is not None and run.gauges.measured else None
    return RunEvidence(
        agents=summary.agents or 0, goodput=summary.slo.goodput if summary.slo else None,
        preemptions=None if preempted is None else int(preempted),
        prefix_hits=None if hits is None else int(hits),
        prefix_queries=None if queries is None else int(queries),
        reuse_mean=sum(reuse) / len(reuse) if reuse else None,
        reuse_min=min(reuse) if reuse else None,
        expected_reuse=sum(t.expected or 0.0 for t in held) / len(held) if held else expected,
        worst_turn_reuse=None if worst is None else worst.reuse,
        worst_turn_expected=None if worst is None else worst.expected,
        kv_usage_peak=gauges.kv_usage_peak if gauges else None,
        waiting_peak=gauges.waiting_peak if gauges else None,
        running_peak=gauges.running_peak if gauges else None,
        max_num_seqs=max_num_seqs,
        reprefill_per_turn=sum(reprefill) / len(reprefill) if reprefill else None,
        turn_new_tokens=sum(new) / len(new) if new else turn_new, misses=misses,
        misses_during_long=during, miss_causes=causes)


@dataclass(frozen=True)
class JudgedRun:
    """A run judged: its verdict record, and what it was judged from (the session shape and
    the prediction for its N, the evidence), for the scripts that print them."""

    record: CapacityVerdict
    verdict: Verdict
    evidence: RunEvidence
    shape: SessionShape
    capacity: Capacity


def judge_run(run: AgentsRun, summary: AgentsSummary, workload: Workload, turns: int,
              slo: str, pool: Pool | None, block_size: int | None = None,
              knobs: Knobs | None = None, shape: SessionShape | None = None) -> JudgedRun | None:
    """The verdict of a run of a fitted workload, with the prediction for its N from `pool`
    (run_pool: given, the engine's /metrics, or its boot log) and the profile's `knobs` where
    the run knows them. `shape`: the session as predicted before the run (the engine's
    /tokenize rendering; session_shape without a first prompt: the longest session); else
    the one that starts at the first prompt the run's own first turns counted. None for a run
    of no fixed turns (a --duration run)."""
    if turns <= 0 or summary.slo is None:
        return None
    if shape is None:
        shape = session_shape(workload, turns, first_turn_prompt(run), RUN_PREFIX)
    knobs = knobs or Knobs(None, None, None)
    capacity = predict(pool, shape, knobs, agents=summary.agents)
    block = pool.block_size if pool else block_size or 16
    found = evidence(run, summary, shape_reuse(shape, block), shape.turn_new_tokens,
                     slo_ttft(slo), knobs.max_num_seqs, block)
    verdict = judge(found, capacity)
    record = CapacityVerdict(
        line=verdict.line, resource=verdict.resource.value if verdict.resource else None,
        met=verdict.met, predicted=capacity.predicted,
        binding=capacity.binding.value if capacity.binding else None,
        pool_tokens=pool.tokens if pool else None, pool_source=pool.source if pool else None,
        working_set_tokens=shape.last_context_tokens, kv_usage_peak=found.kv_usage_peak,
        waiting_peak=found.waiting_peak, running_peak=found.running_peak,
        max_num_seqs=knobs.max_num_seqs, step_budget=knobs.step_budget,
        long_prefill_threshold=knobs.long_prefill_threshold, kv_dtype=knobs.kv_dtype,
        engine_metrics=dict(summary.engine_metrics), slo=slo,
        miss_causes={c.value: n for c, n in (found.miss_causes or {}).items()})
    return JudgedRun(record, verdict, found, shape, capacity)


def run_verdict(run: AgentsRun, summary: AgentsSummary, workload: Workload, turns: int,
                slo: str, pool: Pool | None, block_size: int | None = None,
                knobs: Knobs | None = None,
                shape: SessionShape | None = None) -> CapacityVerdict | None:
    """The verdict record of a run (judge_run's), as the run keeps it."""
    judged = judge_run(run, summary, workload, turns, slo, pool, block_size, knobs, shape)
    return None if judged is None else judged.record


def rejudged(run: AgentsRun, slo: str, cache_config: Mapping[str, Any] | None,
             engine_metrics: Mapping[str, int | float] | None = None) -> CapacityVerdict | None:
    """The run's verdict judged again against `slo` (`bench report --slo`), from its own
    records: its turns, the fitted workload its config record carries, the engine counters
    its verdict record kept (else `engine_metrics`: the run's stored summary's, for files
    written before the record kept them), its gauges, and the pool and knobs the verdict
    record names (the server's block size). None: the run has no verdict (a file from before
    it). A workload that does not read back keeps the old verdict, said so in its line."""
    old = run.capacity
    if old is None:
        return None
    turns = run.config.turns or 0
    try:
        workload = Workload.model_validate((run.config.workload or WorkloadRef()).to_json())
        if workload.fitted is None:
            raise ValueError("the run's workload record is not fitted")
    except ValueError as exc:
        why, was = str(exc).splitlines()[0], old.slo or "the run's own SLO"
        return old.model_copy(update={"line": (
            f"{old.line} (judged against {was}, not {slo}: its workload record does not "
            f"read back: {why})")})
    deltas = dict(old.engine_metrics or engine_metrics or {})
    summary = summarize_run(run, slo).model_copy(update={"engine_metrics": deltas})
    # the pool it was judged against (a record from before pool_source read /metrics)
    pool = Pool(old.pool_tokens, block_size_of(cache_config or {}) or 16,
                old.pool_source or "the engine's /metrics") if old.pool_tokens else None
    knobs = Knobs(old.max_num_seqs, old.step_budget, old.long_prefill_threshold,
                  kv_dtype=old.kv_dtype)
    found = run_verdict(run, summary, workload, turns, slo, pool, knobs=knobs)
    return old if found is None else found
