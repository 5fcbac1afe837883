"""What an agents run measured, from its raw turn records (pure, so `bench report` and `ab`
recompute it from any results file): TTFT overall and by turn, per-agent decode, prefix reuse
per turn, goodput against the SLO, turns during the background job, the client's own CPU."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sm121.bench.agents.slo import evaluate, parse_slo
from sm121.bench.stats import percentile

# key, label, format, better: the metrics an A/B compares.
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("goodput", "goodput (turns meeting the SLO)", "pct", "higher"),
    ("ttft_p50_s", "agent TTFT p50", "s", "lower"),
    ("ttft_p95_s", "agent TTFT p95 (all turns)", "s", "lower"),
    ("ttft_p95_judged_s", "agent TTFT p95 (turns judged by the SLO)", "s", "lower"),
    ("ttft_p99_s", "agent TTFT p99", "s", "lower"),
    ("ttft_p95_during_background_s", "agent TTFT p95 during the background prefill", "s",
     "lower"),
    ("decode_p50", "agent decode tok/s p50", "", "higher"),
    ("reuse_after_first", "prefix reuse after turn 1 (mean)", "pct", "higher"),
    ("background_ttft_s", "background job TTFT", "s", "lower"),
)


def turns_of(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in samples if s.get("kind") == "turn"]


def _config(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return next((s for s in samples if s.get("kind") == "config"), {})


def _background(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((s for s in samples if s.get("kind") == "background"), None)


def _pcts(values: list[float], qs: tuple[int, ...] = (50, 95, 99)) -> dict[str, float | None]:
    return {f"p{q}": percentile(values, q) for q in qs}


def _values(turns: list[dict[str, Any]], key: str) -> list[float]:
    return [float(t[key]) for t in turns if t.get(key) is not None]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def by_turn(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        groups[int(t["turn"])].append(t)
    rows = []
    for index in sorted(groups):
        group = groups[index]
        reuse = _values(group, "reuse")
        rows.append({"turn": index, "n": len(group),
                     **{f"ttft_{k}_s": v for k, v in _pcts(_values(group, "ttft_s")).items()},
                     "reuse_mean": _mean(reuse), "reuse_min": min(reuse) if reuse else None,
                     "prompt_tokens_mean": _mean(_values(group, "prompt_tokens"))})
    return rows


def per_agent(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        groups[int(t["agent"])].append(t)
    return [{"agent": agent, "turns": len(group),
             "decode_p50": percentile(_values(group, "decode_tok_s"), 50),
             "decode_p5": percentile(_values(group, "decode_tok_s"), 5),
             "ttft_p95_s": percentile(_values(group, "ttft_s"), 95)}
            for agent, group in sorted(groups.items())]


def overlaps_background(turn: dict[str, Any], background: dict[str, Any] | None) -> bool:
    """The turn waited for its first token while the background job was in prefill."""
    if background is None or background.get("first_token") is None:
        return False
    start, end = background["submitted"], background["first_token"]
    first = turn.get("first_token") or turn.get("finished") or turn["submitted"]
    return turn["submitted"] < end and first > start


def _split(turns: list[dict[str, Any]], background: dict[str, Any] | None
           ) -> dict[str, Any] | None:
    if background is None:
        return None
    during = [t for t in turns if overlaps_background(t, background)]
    outside = [t for t in turns if not overlaps_background(t, background)]
    return {"prompt_tokens": background.get("prompt_tokens"),
            "submitted": background["submitted"], "first_token": background.get("first_token"),
            "ttft_s": background.get("ttft_s"), "turns_during": len(during),
            "ttft_during": _pcts(_values(during, "ttft_s")),
            "ttft_outside": _pcts(_values(outside, "ttft_s"))}


def judged_from(samples: list[dict[str, Any]]) -> int:
    """The first turn index the SLO judges (the workload's slo_from_turn; 0 for replays)."""
    workload = _config(samples).get("workload") or {}
    return int(workload.get("slo_from_turn", 0 if workload.get("name") == "replay" else 1))


def summarize_agents(samples: list[dict[str, Any]], slo: str | None = None) -> dict[str, Any]:
    config = _config(samples)
    turns = turns_of(samples)
    background = _background(samples)
    first_judged = judged_from(samples)
    judged = [t for t in turns if t["turn"] >= first_judged]
    later = [t for t in turns if t["turn"] > 0]
    reuse_later = _values(later, "reuse")
    waits = _values(turns, "queue_wait_s")
    cpu = _values(turns, "client_cpu_share")
    return {
        "workload": (config.get("workload") or {}).get("name"), "agents": config.get("agents"),
        "tools_mode": config.get("tools_mode"), "turns": len(turns),
        "usage_checked": sum(bool(t.get("usage_checked")) for t in turns),
        "prompt_exact": sum(bool(t.get("prompt_exact")) for t in turns),
        # Messages/Responses: turns whose content events equal usage's tokens (None on chat)
        "events_match_usage": (sum(bool(t.get("events_match_usage")) for t in turns)
                               if any(t.get("events_match_usage") is not None for t in turns)
                               else None),
        "ttft": _pcts(_values(turns, "ttft_s")),
        "judged_from_turn": first_judged, "ttft_judged": _pcts(_values(judged, "ttft_s")),
        "by_turn": by_turn(turns),
        "reuse_after_first": {"mean": _mean(reuse_later),
                              "min": min(reuse_later) if reuse_later else None},
        "per_agent": per_agent(turns),
        "decode_p50": percentile(_values(turns, "decode_tok_s"), 50),
        "slo": evaluate(parse_slo(slo or config.get("slo")), judged),
        "background": _split(judged, background),
        "queue_wait": _pcts(waits, (50, 95)) if waits else None,
        "client_cpu": {"share_p50": percentile(cpu, 50), "share_max": max(cpu) if cpu else None,
                       "cpu_s_p50": percentile(_values(turns, "client_cpu_s"), 50)},
    }


def flatten(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline metrics of one run (what an A/B compares across repetitions)."""
    summary = summarize_agents(samples)
    background = summary["background"] or {}
    return {
        "goodput": summary["slo"]["goodput"], "slo_met": summary["slo"]["met"],
        "ttft_p50_s": summary["ttft"]["p50"], "ttft_p95_s": summary["ttft"]["p95"],
        "ttft_p99_s": summary["ttft"]["p99"], "ttft_p95_judged_s": summary["ttft_judged"]["p95"],
        "ttft_p95_during_background_s": (background.get("ttft_during") or {}).get("p95"),
        "decode_p50": summary["decode_p50"],
        "reuse_after_first": summary["reuse_after_first"]["mean"],
        "background_ttft_s": background.get("ttft_s"),
        "background_prompt_tokens": background.get("prompt_tokens"),
        # the counts behind goodput, for its binomial (Clopper-Pearson) interval
        "judged_turns": summary["slo"]["turns"], "good_turns": summary["slo"]["good_turns"],
        "slo_terms": {r["term"]: r["observed"] for r in summary["slo"]["terms"]},
    }
