"""llama-server's Prometheus names (`--metrics`, off by default: the adapter's argv turns it on),
the one table. Read from llama.cpp b11434's tools/server/server-task.cpp (the metrics
response), which exports counters and gauges only: no latency histograms, no KV-usage gauge.

Two differ in meaning from vLLM's same-named rows: `prompt_tokens_total` excludes the tokens
served from the cache (they are `prompt_tokens_cached_total`), so the prompt tokens a request
asked for are the sum; and `requests_deferred` (requests waiting for a free slot) is the only
queue there is. The prefix-cache queries have no counter of their own: they are prompt plus
cached (`prompt_without_hits`)."""

from __future__ import annotations

from sm121.engines.adapter import MetricNames

NAMESPACE = "llamacpp:"
PROMPT = "llamacpp:prompt_tokens_total"
CACHED = "llamacpp:prompt_tokens_cached_total"
PREDICTED = "llamacpp:tokens_predicted_total"

METRICS = MetricNames(
    running=("llamacpp:requests_processing",),
    waiting=("llamacpp:requests_deferred",),
    kv_usage=(),
    prefix_queries=(),
    prefix_hits=(CACHED,),
    prompt_tokens=(PROMPT,),
    generation_tokens=(PREDICTED,),
    preemptions=(),
    success=(),
    spec_accepted=("llamacpp:spec_decode_num_accepted_tokens_total",),
    spec_draft=("llamacpp:spec_decode_num_draft_tokens_total",),
    ttft=(),
    itl=(),
    e2e=(),
    bench_counters=(
        PROMPT, CACHED, PREDICTED, "llamacpp:prompt_seconds_total",
        "llamacpp:tokens_predicted_seconds_total", "llamacpp:n_decode_total",
        "llamacpp:spec_decode_num_accepted_tokens_total",
        "llamacpp:spec_decode_num_draft_tokens_total", "llamacpp:spec_decode_num_drafts_total",
    ),
    namespaces=(NAMESPACE,),
    prompt_without_hits=(PROMPT,),  # the queries are prompt + cached (MetricNames.queries_in)
)
