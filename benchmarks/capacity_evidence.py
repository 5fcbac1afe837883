"""An agents run's evidence for the capacity verdict, read from its results file: the judged
turns' prefix reuse and re-prefilled tokens, the /metrics deltas (preemptions, prefix-cache
hits and queries), and the judged turns that missed the TTFT SLO inside the long job's prefill
window. Shared by capacity_cliff.py (the CPU cliff) and capacity_judge.py (any results file).

    PYTHONPATH=src .venv/bin/python benchmarks/capacity_judge.py --pool-tokens 781040 \\
        --max-num-seqs 41 results/*.json
"""

from __future__ import annotations

from typing import Any

from sm121.memory.verdict import RunEvidence


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _turns(results: dict[str, Any], judged_from: int) -> list[dict[str, Any]]:
    return [s for s in results.get("samples") or [] if s.get("kind") == "turn"
            and s.get("turn", 0) >= judged_from and s.get("ttft_s") is not None]


def evidence(results: dict[str, Any], expected_reuse: float | None, turn_new: float | None,
             ttft_slo_s: float | None, max_num_seqs: int | None = None) -> RunEvidence:
    s = results["summary"]
    deltas = s.get("engine_metrics") or {}
    judged = _turns(results, s["judged_from_turn"])
    reuse = [t["reuse"] for t in judged if t.get("reuse") is not None]
    reprefill = [t["prompt_tokens"] - t["cached_tokens"] for t in judged
                 if t.get("prompt_tokens") is not None and t.get("cached_tokens") is not None]
    slo = s["slo"]
    misses = during = None
    if ttft_slo_s is not None:
        missed = [t for t in judged if t["ttft_s"] > ttft_slo_s]
        misses = len(missed)
        bg = s.get("background") or {}
        if bg.get("first_token") is not None:
            start, end = bg["submitted"], bg["first_token"]
            during = sum(1 for t in missed if t["submitted"] < end
                         and t["submitted"] + t["ttft_s"] > start)
        else:
            during = 0
    return RunEvidence(
        agents=int(s["agents"]), goodput=slo.get("goodput"),
        preemptions=_int(deltas.get("vllm:num_preemptions_total")),
        prefix_hits=_int(deltas.get("vllm:prefix_cache_hits_total")),
        prefix_queries=_int(deltas.get("vllm:prefix_cache_queries_total")),
        reuse_mean=sum(reuse) / len(reuse) if reuse else None,
        reuse_min=min(reuse) if reuse else None, expected_reuse=expected_reuse,
        max_num_seqs=max_num_seqs,
        reprefill_per_turn=sum(reprefill) / len(reprefill) if reprefill else None,
        turn_new_tokens=turn_new, misses=misses, misses_during_long=during)
