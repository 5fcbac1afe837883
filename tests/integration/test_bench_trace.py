"""`sm121 bench trace` against the real tiny vLLM engine: a small Mooncake-format trace
(tests/support/mooncake.py: 3 sessions x 3 turns, one shared system block, each turn its
session's last prompt plus two blocks) replayed on its timestamps through the real CLI. The
engine's prefix cache must see the trace's reuse: the cached tokens it reports (usage and its
/metrics counters) are within TOLERANCE below what the trace's hash_ids imply, never above."""

from __future__ import annotations

import json

import pytest
from support import TinyEngine, run_cli
from support.mooncake import conversation_trace, jsonl

from sm121.bench.report.markdown import render_report
from sm121.bench.scenarios import parse_results

pytestmark = pytest.mark.integration

# An ideal cache hits all the trace implies; a request whose session's previous turn had not
# finished its prefill when it went out (a loaded host) hits less. Nothing hits more: the
# prompts share tokens only where the trace shares hash_ids.
TOLERANCE = 0.10


def test_a_trace_replays_with_the_prefix_hits_its_hash_ids_imply(tiny_engine: TinyEngine,
                                                                 tmp_path):
    trace = tmp_path / "conversation.jsonl"
    trace.write_text(jsonl(conversation_trace(sessions=3, turns=3, gap_ms=1000)))
    out = tmp_path / "trace.json"
    # 128 tokens a block: the engine's own KV block on CPU, prompts of 281 to 793 tokens
    result = run_cli("bench", "trace", str(trace), "--url", tiny_engine.base_url,
                     "--block-tokens", "128", "--slo", "ttft_p95=30s", "--out", str(out),
                     "--json", timeout=300)
    summary = json.loads(result.stdout)
    data = json.loads(out.read_text())
    assert data["status"] == "complete" and parse_results(data).to_json() == data
    samples = data["samples"]
    assert [s["request"] for s in sorted(samples, key=lambda s: s["request"])] == list(range(9))
    assert [s["prompt_tokens"] for s in sorted(samples, key=lambda s: s["request"])] == \
        [281] * 3 + [537] * 3 + [793] * 3  # exact: token ids, lengths scaled by 128/512
    cache = summary["cache"]
    assert summary["engine_block"] == 128
    assert cache["implied"] == 3 * 128 - 128 + 3 * 256 + 3 * 512  # tests/unit: by hand
    for sample in samples:
        assert sample["cached_tokens"] <= sample["implied_cached"], sample
    assert 1 - TOLERANCE <= cache["usage_vs_implied"] <= 1.0, cache
    assert cache["short_requests"] == sum(s["cached_tokens"] < s["implied_cached"]
                                          for s in samples)
    assert 1 - TOLERANCE <= cache["engine_vs_implied"] <= 1.0 + TOLERANCE, cache
    # TTFT, goodput and lag are measured (values depend on the host; the SLO is loose)
    assert summary["ttft_s"]["p95"] > 0 and summary["goodput"] is not None
    assert summary["lag_s"]["max"] < 1.0  # the sender kept the trace's clock
    assert summary["trace_s"] == pytest.approx(8.0, abs=0.05)
    report = render_report([out], tmp_path / "report", "t").read_text()
    assert "trace" in report
