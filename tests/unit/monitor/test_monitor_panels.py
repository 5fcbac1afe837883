"""Engine, gateway and host panels from /metrics text and /proc/meminfo values."""

from __future__ import annotations

import pytest

from sm121.engines.metrics_snapshot import Snapshot
from sm121.gateway.metrics import GatewayMetrics
from sm121.hosts.host_panel import host_panel
from sm121.monitor.engine import engine_panel
from sm121.monitor.gateway import gateway_panel, is_gateway

L = 'engine="0",model_name="tiny"'


def _vllm(prompt: float, generation: float, hits: float, queries: float, ttft: list[float],
          running: float = 2, kv: float = 0.25) -> str:
    """A /metrics page shaped like vLLM 0.32's (names and labels as it writes them)."""
    lines = [f"vllm:num_requests_running{{{L}}} {running}",
             f"vllm:num_requests_waiting{{{L}}} 1.0",
             f"vllm:kv_cache_usage_perc{{{L}}} {kv}",
             f"vllm:prompt_tokens_total{{{L}}} {prompt}",
             f"vllm:generation_tokens_total{{{L}}} {generation}",
             f"vllm:prefix_cache_hits_total{{{L}}} {hits}",
             f"vllm:prefix_cache_queries_total{{{L}}} {queries}",
             f"vllm:num_preemptions_total{{{L}}} 0.0"]
    for bound, count in zip(("0.01", "0.1", "1.0", "+Inf"), ttft, strict=True):
        lines.append(f'vllm:time_to_first_token_seconds_bucket{{{L},le="{bound}"}} {count}')
    return "\n".join(lines) + "\n"


def test_engine_panel_rates_gauges_and_quantiles() -> None:
    before = Snapshot.parse(_vllm(1000, 500, 0, 1000, [5, 5, 5, 5]), at=10.0)
    after = Snapshot.parse(_vllm(3000, 900, 1500, 3000, [5, 5, 9, 9]), at=12.0)
    panel = engine_panel(before, after)
    assert panel["running"] == 2 and panel["waiting"] == 1
    assert panel["kv_usage_pct"] == 25.0
    assert panel["prompt_tok_s"] == 1000.0 and panel["generation_tok_s"] == 200.0
    assert panel["prefix_hit_rate_pct"] == 75.0
    assert panel["ttft_s"]["count"] == 4
    assert 0.1 < panel["ttft_s"]["p50"] < panel["ttft_s"]["p95"] <= 1.0
    assert panel["spec_acceptance_pct"] is None  # no speculative decoding exported
    assert panel["itl_s"] == {"p50": None, "p95": None, "count": None}


def test_spec_acceptance_when_exported() -> None:
    spec = ("vllm:spec_decode_num_accepted_tokens_total {a}\n"
            "vllm:spec_decode_num_draft_tokens_total {d}\n")
    before = Snapshot.parse(spec.format(a=0, d=0), 0.0)
    after = Snapshot.parse(spec.format(a=71, d=100), 1.0)
    assert engine_panel(before, after)["spec_acceptance_pct"] == 71.0


def test_gateway_panel_from_the_gateways_own_registry() -> None:
    metrics = GatewayMetrics()
    metrics.inflight.labels("short").set(2)
    metrics.queue_depth.labels("short").set(0)
    metrics.queue_depth.labels("long").set(1)
    before = Snapshot.parse(metrics.render().decode(), 0.0)
    metrics.stripped.labels("repetition_penalty").inc(3)
    metrics.upstream_errors.labels("unreachable").inc()
    for wait in (0.002, 0.003, 0.004, 2.0):
        metrics.queue_wait.labels("long").observe(wait)
    after = Snapshot.parse(metrics.render().decode(), 2.0)
    assert is_gateway(after)
    panel = gateway_panel(before, after)
    assert panel["inflight"]["short"] == 2 and panel["queue_depth"]["long"] == 1
    assert panel["stripped"] == 3 and panel["rejected"] == 0
    assert panel["upstream_failures"] == {"unreachable": 1}
    assert 1 < panel["wait_p95_s"]["long"] <= 5
    assert panel["wait_p95_s"]["short"] is None  # nothing waited in that lane


def test_gateway_panel_shows_session_admission() -> None:
    from sm121.gateway.session_gate import SessionMetrics

    metrics = GatewayMetrics()
    sessions = SessionMetrics(metrics.registry)
    sessions.sessions.labels("active").set(4)
    sessions.sessions.labels("waiting").set(2)
    before = Snapshot.parse(metrics.render().decode(), 0.0)
    for wait in (0.0, 0.0, 40.0):
        sessions.wait.observe(wait)
    sessions.refusals.labels("timeout").inc()
    after = Snapshot.parse(metrics.render().decode(), 2.0)
    panel = gateway_panel(before, after)
    assert panel["sessions"] == {"active": 4, "waiting": 2, "idle": 0}
    assert 30 < panel["session_wait_p95_s"] <= 60
    assert panel["session_refusals"] == 1


def test_host_panel_shows_the_uma_gate_pair() -> None:
    kib = 1024 * 1024
    meminfo = {"MemTotal": 120 * kib, "MemFree": 10 * kib, "MemAvailable": 30 * kib,
               "Cached": 21 * kib, "SwapTotal": 4 * kib, "SwapFree": 3 * kib}
    panel = host_panel("spark1", meminfo, [1.0, 0.5, 0.25])
    assert panel["uma_gap_gib"] == pytest.approx(20.0)
    assert panel["page_cache_gib"] == 21.0 and panel["swap_used_gib"] == 1.0
    assert panel["load"] == [1.0, 0.5, 0.25]
