"""vLLM's Prometheus names, the one table: what monitor, bench (soak included), gateway and
doctor read. Where vLLM renamed a metric, the older name follows the newer one (vLLM 0.x
exported `gpu_cache_usage_perc` before `kv_cache_usage_perc`, `time_per_output_token_seconds`
before `inter_token_latency_seconds`)."""

from __future__ import annotations

from sm121.engines.adapter import MetricNames

METRICS = MetricNames(
    running=("vllm:num_requests_running",),
    waiting=("vllm:num_requests_waiting",),
    kv_usage=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    prefix_queries=("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    prefix_hits=("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    prompt_tokens=("vllm:prompt_tokens_total",),
    generation_tokens=("vllm:generation_tokens_total",),
    preemptions=("vllm:num_preemptions_total",),
    success=("vllm:request_success_total",),
    spec_accepted=("vllm:spec_decode_num_accepted_tokens_total",),
    spec_draft=("vllm:spec_decode_num_draft_tokens_total",),
    ttft=("vllm:time_to_first_token_seconds",),
    itl=("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    e2e=("vllm:e2e_request_latency_seconds",),
    bench_counters=(
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
        "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
        "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_drafts_total", "vllm:num_preemptions_total",
        "vllm:request_prefill_time_seconds_sum", "vllm:request_prefill_time_seconds_count",
        "vllm:request_queue_time_seconds_sum", "vllm:request_queue_time_seconds_count",
    ),
    namespaces=("vllm:",),
    prefill_time=("vllm:request_prefill_time_seconds",),
    decode_time=("vllm:request_decode_time_seconds",),
    cache_config=("vllm:cache_config_info",),
)
