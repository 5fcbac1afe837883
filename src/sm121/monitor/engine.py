"""The engine panel: what a vLLM server's /metrics says about the last interval.

Gauges are read as they are now; counters become rates and histograms quantiles over the
interval between two scrapes (so a number means "lately", not "since boot")."""

from __future__ import annotations

from typing import Any

from sm121.monitor.snapshot import Snapshot, counter_delta, delta_quantiles, first_name, rate

# Names vLLM has used for the same thing across versions; the first one exported wins.
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
PREFIX_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PROMPT_TOKENS = ("vllm:prompt_tokens_total",)
GENERATION_TOKENS = ("vllm:generation_tokens_total",)
PREEMPTIONS = ("vllm:num_preemptions_total",)
SUCCESS = ("vllm:request_success_total",)
SPEC_ACCEPTED = ("vllm:spec_decode_num_accepted_tokens_total",)
SPEC_DRAFT = ("vllm:spec_decode_num_draft_tokens_total",)
TTFT = ("vllm:time_to_first_token_seconds",)
ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
E2E = ("vllm:e2e_request_latency_seconds",)


def engine_panel(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """One interval of the engine, as plain JSON values (None: not exported / nothing seen)."""
    kv = _gauge(after, KV_USAGE)
    return {
        "running": _gauge(after, RUNNING),
        "waiting": _gauge(after, WAITING),
        "kv_usage_pct": None if kv is None else round(100 * kv, 2),
        "prefix_hit_rate_pct": _ratio_pct(before, after, PREFIX_HITS, PREFIX_QUERIES),
        "prompt_tok_s": _rate(before, after, PROMPT_TOKENS),
        "generation_tok_s": _rate(before, after, GENERATION_TOKENS),
        "requests_done": _delta(before, after, SUCCESS),
        "preemptions": _delta(before, after, PREEMPTIONS),
        "spec_acceptance_pct": _ratio_pct(before, after, SPEC_ACCEPTED, SPEC_DRAFT),
        "ttft_s": _quantiles(before, after, TTFT),
        "itl_s": _quantiles(before, after, ITL),
        "e2e_s": _quantiles(before, after, E2E),
        "interval_s": round(after.at - before.at, 3),
    }


def _gauge(snapshot: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(snapshot, *names)
    return None if name is None else snapshot.value(name)


def _rate(before: Snapshot, after: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(after, *names)
    value = None if name is None else rate(before, after, name)
    return None if value is None else round(value, 2)


def _delta(before: Snapshot, after: Snapshot, names: tuple[str, ...]) -> float | None:
    name = first_name(after, *names)
    return None if name is None else counter_delta(before, after, name)


def _ratio_pct(before: Snapshot, after: Snapshot, part: tuple[str, ...],
               whole: tuple[str, ...]) -> float | None:
    """part/whole over the interval; None when the engine does not export them (e.g. no
    speculative decoding) or nothing happened."""
    top, bottom = _delta(before, after, part), _delta(before, after, whole)
    if top is None or not bottom:
        return None
    return round(100 * top / bottom, 2)


def _quantiles(before: Snapshot, after: Snapshot,
               names: tuple[str, ...]) -> dict[str, float | None]:
    name = next((n for n in names if after.has(f"{n}_bucket")), None)
    if name is None:
        return {"p50": None, "p95": None, "count": None}
    values = delta_quantiles(before, after, name)
    return {k: (None if v is None else round(v, 4)) for k, v in values.items()}
