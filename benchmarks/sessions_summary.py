"""Summarise a session-admission A/B (benchmarks/sessions_ab.sh's OUT_DIR) as Markdown:

    python benchmarks/sessions_summary.py OUT_DIR > OUT_DIR/summary.md

Per arm: turns judged (turn >= 1, the bench's own rule), good turns (the bench's own SLO
judgement), the run's window (first submit to last finish) and good turns per minute of it,
prefix reuse of the judged turns (the engine's cached_tokens / prompt_tokens, read as the
bench reads it: reused.turn_reused; "-" where the engine reports no count), the engine's
prefix-cache hit rate and preemptions over the run (its /metrics before and after). Per
session: its first turn's wait (turn 0 TTFT, which holds the gateway's wait), its judged
goodput and reuse. And the check that no turn of an active session queued behind a new
session: the TTFTs of turns >= 1 that started while some session was still waiting for its
first token.

A run's name (its file's) and a session's agent id are a results folder's strings: each
enters the Markdown through `display_markdown.inert`."""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from sm121.bench.scenarios.agents.models import TurnSample
from sm121.bench.scenarios.agents.reused import reports_cached, turn_reused
from sm121.display_markdown import inert


def counters(path: Path) -> dict[str, float]:
    """A saved /metrics page (or its .gz) -> {sample name: value summed over labels}."""
    zipped = path.with_name(path.name + ".gz")
    text = gzip.decompress(zipped.read_bytes()).decode() if zipped.exists() else path.read_text()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals


def delta(out: Path, name: str, metric: str) -> float:
    before = counters(out / f"{name}-engine-before.prom")
    after = counters(out / f"{name}-engine-after.prom")
    return after.get(metric, 0.0) - before.get(metric, 0.0)


def counts(turn: dict[str, Any]) -> TurnSample:
    """What the reuse of a turn reads (the rest of a results folder's record is not read)."""
    return TurnSample.model_validate({k: turn.get(k)
                                      for k in ("prompt_tokens", "cached_tokens", "reuse")})


def mean_reuse(turns: list[dict[str, Any]], reported: bool) -> float | None:
    """The turns' mean reuse (a turn with no count, where the run's engine reports them, at 0);
    None where none is known."""
    known = [v for t in turns if (v := turn_reused(counts(t), reported)) is not None]
    return statistics.mean(known) if known else None


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def arm(out: Path, name: str) -> dict[str, Any]:
    path = out / f"{name}.json"
    zipped = path.with_name(path.name + ".gz")
    data = json.loads(gzip.decompress(zipped.read_bytes()) if zipped.exists()
                      else path.read_text())
    turns = [s for s in data["samples"] if s.get("kind") == "turn"]
    reported = reports_cached(counts(t) for t in turns)
    slo = data["summary"]["slo"]
    threshold = slo["terms"][0]["threshold"]
    judged = [t for t in turns if t["turn"] >= 1]
    start = min(t["submitted"] for t in turns)
    end = max(t["finished"] for t in turns if t["finished"] is not None)
    waits = [(t["submitted"], t["first_token"]) for t in turns if t["turn"] == 0]
    behind = [t["ttft_s"] for t in judged
              if any(s <= t["submitted"] < f for s, f in waits if f is not None)]
    sessions = []
    for agent in sorted({t["agent"] for t in turns}):
        own = [t for t in turns if t["agent"] == agent]
        later = [t for t in own if t["turn"] >= 1]
        first = next(t for t in own if t["turn"] == 0)
        sessions.append({
            "agent": agent, "first_ttft": first["ttft_s"],
            "good": sum(t["ttft_s"] is not None and t["ttft_s"] <= threshold for t in later),
            "judged": len(later),
            "reuse": mean_reuse(later, reported),
            "ttft_max": max(t["ttft_s"] or 0.0 for t in later) if later else None})
    queries = delta(out, name, "vllm:prefix_cache_queries_total")
    return {"name": name, "slo": slo["slo"], "judged": slo["turns"],
            "good": slo["good_turns"], "window": end - start,
            "reuse": mean_reuse(judged, reported),
            "ttft_p95": data["summary"]["ttft_judged"]["p95"],
            "hit_rate": delta(out, name, "vllm:prefix_cache_hits_total") / queries
            if queries else None,
            "preemptions": delta(out, name, "vllm:num_preemptions_total"),
            "behind": behind, "sessions": sessions}


def main(out: Path) -> None:
    names = sorted({p.name.split(".")[0] for p in out.glob("*.json*")
                    if p.name[0].isdigit() and p.name.split(".")[0].count("-") == 1},
                   key=lambda n: int(n.split("-")[0]))
    arms = [arm(out, n) for n in names]
    print("| run | judged turns | good turns | window s | good / min | TTFT p95 (judged) | "
          "reuse (judged, mean) | engine prefix hits | preemptions |")
    print("|---|---|---|---|---|---|---|---|---|")
    for a in arms:
        hit = "-" if a["hit_rate"] is None else f"{a['hit_rate']:.1%}"
        print(f"| {inert(a['name'])} | {inert(a['judged'])} | {inert(a['good'])} | {a['window']:.1f} | "
              f"{a['good'] / a['window'] * 60:.1f} | {a['ttft_p95']:.2f} s | {pct(a['reuse'])} | "
              f"{hit} | {a['preemptions']:.0f} |")
    print()
    for a in arms:
        print(f"**{inert(a['name'])}** per session (agent: first-turn TTFT, which holds any wait; "
              "good/judged turns; reuse of judged turns; slowest judged TTFT):")
        print()
        print("| agent | first turn TTFT | good / judged | reuse | slowest judged TTFT |")
        print("|---|---|---|---|---|")
        for s in a["sessions"]:
            print(f"| {inert(s['agent'])} | {s['first_ttft']:.2f} s | {s['good']} / {s['judged']} | "
                  f"{pct(s['reuse'])} | {s['ttft_max']:.2f} s |")
        behind = a["behind"]
        print()
        print(f"Turns >= 1 that started while a session waited for its first token: "
              f"{len(behind)}" + (f", TTFT max {max(behind):.2f} s, median "
                                   f"{statistics.median(behind):.2f} s" if behind else ""))
        print()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
