"""The capacity model's view of an agents run: the workload's numbers for the prediction
(memory/capacity.py takes plain numbers: memory/ may not import bench/), the run's evidence
(its judged turns' reuse and re-prefilled tokens, the /metrics deltas, the misses inside the
long job's prefill window) and the verdict line every agents run prints (docs/capacity.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sm121.bench.scenarios.agents.models import AgentsRun, AgentsSummary, CapacityVerdict
from sm121.bench.scenarios.agents.slo import parse_slo
from sm121.bench.scenarios.agents.workload import (
    TEMPLATE_MARGIN,
    Workload,
    fit_to_server,
    load_workload,
)
from sm121.bench.server import preemptions, prefix_counts
from sm121.engines.adapter import SchedulerFlags
from sm121.engines.client import block_size_of, kv_pool_of
from sm121.memory.capacity import Knobs, Pool, SessionShape, predict
from sm121.memory.verdict import RunEvidence, expected_reuse, judge


def session_shape(w: Workload, turns: int) -> SessionShape:
    """A fitted workload (`fit`) as the capacity model's numbers, for a run of `turns` turns."""
    if w.fitted is None:
        raise ValueError("session_shape needs a fitted workload (workload.fit)")
    append = (w.append_tokens.min + w.append_tokens.max) / 2 + w.paste.tokens * w.paste.share
    reply = (w.output_tokens.min + w.output_tokens.max) / 2
    return SessionShape(
        workload=w.name, turns=turns, last_context_tokens=w.fitted.conversation_tokens_max,
        growth_per_turn_tokens=w.per_turn_tokens(),
        # a cached turn prefills its new input, the template, and the previous reply as the
        # chat template re-renders it (its generated blocks may not match token for token)
        turn_new_tokens=append + reply + TEMPLATE_MARGIN, reply_tokens=reply,
        think_time_s=(w.think_time_s.min + w.think_time_s.max) / 2,
        long_job_tokens=w.fitted.background_tokens)


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


def load_shape(workload: str, turns: int, max_model_len: int) -> SessionShape:
    """A preset (or YAML file) fitted to the server as a run of `turns` turns sends it."""
    return session_shape(fit_to_server(load_workload(workload), max_model_len, turns), turns)


def shape_reuse(shape: SessionShape, block_size: int) -> float | None:
    """What the judged turns reuse when nothing is evicted (block rounding only)."""
    first = shape.last_context_tokens - shape.turns * shape.growth_per_turn_tokens
    return expected_reuse(first, shape.growth_per_turn_tokens, shape.turn_new_tokens,
                          shape.turns, block_size)


def slo_ttft(slo: str | None) -> float | None:
    """The TTFT threshold of an SLO such as ttft_p95=2s (None: no TTFT term)."""
    return next((t.threshold for t in parse_slo(slo) if t.metric == "ttft"), None)


def pool_of(cache_config: Mapping[str, Any] | None) -> Pool | None:
    """The engine's pool from its cache-config labels (engines/client.cache_config): blocks
    x block size; None when the engine does not say (vLLM 0.21 has no block count there)."""
    found = kv_pool_of(cache_config or {})
    if found is None:
        return None
    blocks, size = found
    return Pool(blocks * size, size, "the engine's /metrics")


def evidence(run: AgentsRun, summary: AgentsSummary, expected: float | None,
             turn_new: float | None, ttft_slo_s: float | None,
             max_num_seqs: int | None = None) -> RunEvidence:
    """The run's evidence: judged turns' reuse and re-prefilled tokens (prompt - cached), the
    /metrics deltas, the judged misses and those inside the long job's prefill window."""
    judged = [t for t in run.turns if t.turn >= summary.judged_from_turn and t.ttft_s is not None]
    reuse = [t.reuse for t in judged if t.reuse is not None]
    reprefill = [t.prompt_tokens - t.cached_tokens for t in judged
                 if t.prompt_tokens is not None and t.cached_tokens is not None]
    misses = during = None
    if ttft_slo_s is not None:
        missed = [t for t in judged if (t.ttft_s or 0.0) > ttft_slo_s]
        misses, during = len(missed), 0
        bg = summary.background
        if bg is not None and bg.submitted is not None and bg.first_token is not None:
            start, end = bg.submitted, bg.first_token
            during = sum(1 for t in missed if t.submitted < end
                         and t.submitted + (t.ttft_s or 0.0) > start)
    deltas = summary.engine_metrics
    preempted = preemptions(deltas)
    hits, queries = prefix_counts(deltas)
    return RunEvidence(
        agents=summary.agents or 0, goodput=summary.slo.goodput if summary.slo else None,
        preemptions=None if preempted is None else int(preempted),
        prefix_hits=None if hits is None else int(hits),
        prefix_queries=None if queries is None else int(queries),
        reuse_mean=sum(reuse) / len(reuse) if reuse else None,
        reuse_min=min(reuse) if reuse else None, expected_reuse=expected,
        max_num_seqs=max_num_seqs,
        reprefill_per_turn=sum(reprefill) / len(reprefill) if reprefill else None,
        turn_new_tokens=turn_new, misses=misses, misses_during_long=during)


def run_verdict(run: AgentsRun, summary: AgentsSummary, workload: Workload, turns: int,
                slo: str, cache_config: Mapping[str, Any] | None,
                knobs: Knobs | None = None) -> CapacityVerdict | None:
    """The verdict line of a run of a fitted workload, with the prediction for its N from
    the engine's own pool; None for a run of no fixed turns (a --duration run)."""
    if turns <= 0 or summary.slo is None:
        return None
    shape = session_shape(workload, turns)
    pool = pool_of(cache_config)
    capacity = predict(pool, shape, knobs or Knobs(None, None, None), agents=summary.agents)
    block = pool.block_size if pool else block_size_of(cache_config or {}) or 16
    found = judge(evidence(run, summary, shape_reuse(shape, block), shape.turn_new_tokens,
                           slo_ttft(slo)), capacity)
    return CapacityVerdict(
        line=found.line, resource=found.resource.value if found.resource else None,
        met=found.met, predicted=capacity.predicted,
        binding=capacity.binding.value if capacity.binding else None,
        pool_tokens=pool.tokens if pool else None,
        working_set_tokens=shape.last_context_tokens)
