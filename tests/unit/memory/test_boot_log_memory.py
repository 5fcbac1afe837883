"""Memory lines of vLLM boot logs: the CPU KV size, and the two refusals."""

from __future__ import annotations

from sm121.engines.vllm.log import parse_boot_log

CPU = ("(Worker pid=1) INFO [cpu_worker.py:260] Explicitly set (2.0/23.47) GiB for KV cache on "
       "node 0.\n(EngineCore pid=2) INFO CPU KV cache size: 4,194,304 tokens, Maximum "
       "concurrency for 65,536 tokens per request: 64.00x\n")
START = ("ValueError: Free memory on device cuda:0 (25.1/119.6 GiB) on startup is less than "
         "desired GPU memory utilization (0.78, 93.29 GiB). Decrease GPU memory utilization")
KV = ("ValueError: To serve at least one request with the model's max seq len (262144), "
      "(18.35 GiB KV cache is needed, which is larger than the available KV cache memory "
      "(5.34 GiB). Based on the available memory, ...")


def test_cpu_kv_line_gives_kv_memory_and_node_total() -> None:
    facts = parse_boot_log(CPU)
    assert (facts.kv_memory_gib, facts.memory_total_gib) == (2.0, 23.47)
    assert facts.kv_pool_tokens == 4_194_304


def test_refusals_carry_their_numbers() -> None:
    start = parse_boot_log(START)
    assert (start.startup_free_gib, start.memory_total_gib) == (25.1, 119.6)
    kv = parse_boot_log(KV)
    assert (kv.kv_needed_gib, kv.kv_memory_gib) == (18.35, 5.34)
