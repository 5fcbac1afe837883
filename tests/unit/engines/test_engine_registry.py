"""The registry and the vLLM adapter: what plan, launch and the readers get through the seam."""

from __future__ import annotations

import pytest

from sm121.engines.registry import adapter_for, adapter_of, has_adapter, metric_names
from sm121.errors import Sm121Error
from sm121.recipes.schema import EngineKind


def test_a_plan_engine_name_finds_its_adapter() -> None:
    assert adapter_of("vllm") is adapter_for(EngineKind.VLLM)
    assert adapter_of(None) is adapter_for(EngineKind.VLLM)  # the schema's default engine


def test_an_engine_without_adapter_is_refused_with_the_registered_ones() -> None:
    assert not has_adapter(EngineKind.SGLANG)
    with pytest.raises(Sm121Error) as raised:
        adapter_for(EngineKind.SGLANG)
    assert "sglang" in raised.value.message and "vllm" in (raised.value.hint or "")


def test_the_metric_table_keeps_the_older_names_after_the_newer() -> None:
    names = metric_names()
    assert names.kv_usage == ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert names.itl[-1] == "vllm:time_per_output_token_seconds"
    assert set(names.prefix_hits) & set(names.bench_counters) == {
        "vllm:prefix_cache_hits_total", "llamacpp:prompt_tokens_cached_total"}
    # Engine by engine: vLLM's names first (a vLLM endpoint exports none of llama.cpp's).
    assert names.running == ("vllm:num_requests_running", "llamacpp:requests_processing")


def test_every_adapter_implements_each_small_protocol_whole() -> None:
    """The seam is small protocols an engine composes (argv, flags, trust, boot log, tables):
    each registered adapter implements every one of them."""
    from sm121.engines.adapter import PARTS
    from sm121.engines.registry import adapters

    assert {a.kind for a in adapters()} == {EngineKind.VLLM, EngineKind.LLAMA_CPP}
    for adapter in adapters():
        missing = [part.__name__ for part in PARTS if not isinstance(adapter, part)]
        assert missing == [], adapter.label


def test_the_ray_port_is_asked_only_for_docker() -> None:
    engine = adapter_for(EngineKind.VLLM)
    assert engine.rendezvous_ports("docker") == (6379,)
    assert engine.rendezvous_ports("native") == ()


def test_prefix_queries_are_the_engines_counter_or_llama_cpps_prompt_plus_hits() -> None:
    """vLLM counts its prefix-cache queries; llama-server has no such counter, and its prompt
    counter leaves out the cached tokens, so its queries are prompt plus cached."""
    names = metric_names()
    assert names.queries_in({"vllm:prefix_cache_queries_total": 100.0,
                             "vllm:prefix_cache_hits_total": 90.0}) == 100.0
    assert names.queries_in({"llamacpp:prompt_tokens_total": 10.0,
                             "llamacpp:prompt_tokens_cached_total": 90.0}) == 100.0
    assert names.queries_in({"llamacpp:prompt_tokens_total": 10.0}) is None
    assert names.queries_in({}) is None
