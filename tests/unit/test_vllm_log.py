"""Facts read from vLLM boot logs, and the cause of a dead engine."""

from __future__ import annotations

from sm121.engines.vllm.log import death_cause, parse_boot_log

CPU_BOOT = """\
(Worker pid=2682) INFO 11-29 19:50:13 [default_loader.py:501] Loading weights took 0.00 seconds
(EngineCore pid=2670) INFO 11-29 19:50:42 [kv_cache_utils.py:2327] CPU KV cache size: 4,194,304 tokens, Maximum concurrency for 65,536 tokens per request: 64.00x
(EngineCore pid=2670) INFO 11-29 19:50:47 [core.py:402] init engine (profile, create kv cache, warmup model) took 32.99 s
INFO:     Application startup complete.
"""

GPU_BOOT = """\
INFO [gpu_model_runner.py] Model loading took 77.70 GiB and 742.13 seconds
INFO [gpu_worker.py] Available KV cache memory: 2.39 GiB
INFO [kv_cache_utils.py] GPU KV cache size: 2,669,829 tokens
INFO [kv_cache_utils.py] Maximum concurrency for 1,048,576 tokens per request: 2.55x
INFO [gpu_model_runner.py] Graph capturing finished in 41 secs, took 0.52 GiB
INFO [core.py] init engine (profile, create kv cache, warmup model) took 212.40 seconds
"""


def test_cpu_boot_log() -> None:
    facts = parse_boot_log(CPU_BOOT)
    assert facts.kv_pool_tokens == 4_194_304
    assert facts.max_concurrency == 64.0 and facts.max_concurrency_at_tokens == 65_536
    assert facts.weights_load_s == 0.0
    assert facts.init_engine_s == 32.99


def test_gpu_boot_log() -> None:
    facts = parse_boot_log(GPU_BOOT)
    assert facts.kv_pool_tokens == 2_669_829
    assert facts.max_concurrency == 2.55
    assert facts.kv_memory_gib == 2.39
    assert (facts.weights_gib, facts.weights_load_s) == (77.70, 742.13)
    assert facts.graph_capture_s == 41
    assert facts.init_engine_s == 212.40


def test_empty_log_gives_no_facts() -> None:
    assert parse_boot_log("").kv_pool_tokens is None


def test_death_cause_prefers_the_exception_line() -> None:
    log = CPU_BOOT.splitlines()[:1] + [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "ValueError: User-specified max_model_len (99999999) is greater than the derived "
        "max_model_len (max_position_embeddings=131072)",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    cause, tail = death_cause("\n".join(log))
    assert cause.startswith("ValueError: User-specified max_model_len")
    assert any("max_model_len (99999999)" in line for line in tail)


def test_death_cause_of_an_empty_log() -> None:
    cause, tail = death_cause("")
    assert cause == "(the log is empty)" and tail == []


def test_death_cause_keeps_the_indented_reason() -> None:
    log = "\n".join([
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, User-specified max_model_len (99999999) is greater than the derived",
        "    For further information visit https://errors.pydantic.dev/2.14/v/value_error",
    ])
    cause, _ = death_cause(log)
    assert "1 validation error for ModelConfig" in cause
    assert "max_model_len (99999999)" in cause and "pydantic.dev" not in cause


def test_a_kill_leaves_no_error_line() -> None:
    from sm121.engines.vllm.log import has_error_line

    assert not has_error_line('INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    assert has_error_line("ValueError: max_model_len exceeds the KV pool\n")
    assert not has_error_line("Triton is installed, but doesn't include CPU backend. Error\n")
