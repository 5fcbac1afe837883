"""Prometheus text through prometheus_client's parser: names with colons, label values
with escapes, histograms by their `le` label, and a page with one malformed line still
read sample by sample."""

from __future__ import annotations

from sm121.engines.prometheus import metric_labels, parse_metrics, parse_samples

PAGE = """# HELP vllm:e2e_request_latency_seconds latency
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 5.0
vllm:e2e_request_latency_seconds_count{model_name="m"} 5.0
vllm:e2e_request_latency_seconds_sum{model_name="m"} 2.5
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",note="a \\"quoted\\" value"} 1.0
"""


def test_histograms_keep_their_bucket_labels() -> None:
    buckets = {labels["le"]: value for name, labels, value in parse_samples(PAGE)
               if name == "vllm:e2e_request_latency_seconds_bucket"}
    assert buckets == {"0.5": 3.0, "+Inf": 5.0}
    assert parse_metrics(PAGE)["vllm:e2e_request_latency_seconds_sum"] == 2.5


def test_info_labels_are_unescaped() -> None:
    labels = metric_labels(PAGE, "vllm:cache_config_info")
    assert labels == {"block_size": "16", "note": 'a "quoted" value'}


def test_a_malformed_line_leaves_the_rest_readable() -> None:
    page = PAGE + "this is { not prometheus\nvllm:num_requests_running 2\n"
    totals = parse_metrics(page)
    assert totals["vllm:num_requests_running"] == 2.0
    assert totals["vllm:e2e_request_latency_seconds_count"] == 5.0
