"""The rich view of one sample: the runs (engine and gateway panels) or the nodes (hosts)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

VIEWS = ("runs", "nodes")
KEYS_HELP = "q quit · n nodes/runs"


def _num(value: Any, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer() or digits:
        return f"{value:,.{digits}f}{suffix}"
    return f"{int(value):,}{suffix}"


def _pair(q: dict[str, Any] | None) -> str:
    """p50 / p95 in seconds, from a quantiles dict."""
    if not q or q.get("p50") is None:
        return "-"
    return f"{q['p50']:.3f} / {q['p95']:.3f}"


def engine_table(rows: list[dict[str, Any]]) -> Table:
    table = Table("run / url", "run", "wait", "KV %", "prefix hit %", "prompt tok/s",
                  "gen tok/s", "TTFT p50/p95 s", "ITL p50/p95 s", "e2e p50/p95 s", "preempt",
                  "spec acc %", title="engine (last interval)", title_justify="left")
    for row in rows:
        e = row.get("engine")
        if e is None:
            table.add_row(row["name"], *(["-"] * 10), "", style="red")
            continue
        table.add_row(row["name"], _num(e["running"], 0), _num(e["waiting"], 0),
                      _num(e["kv_usage_pct"]), _num(e["prefix_hit_rate_pct"]),
                      _num(e["prompt_tok_s"]), _num(e["generation_tok_s"]), _pair(e["ttft_s"]),
                      _pair(e["itl_s"]), _pair(e["e2e_s"]), _num(e["preemptions"], 0),
                      _num(e["spec_acceptance_pct"]))
    return table


def _lanes(values: dict[str, Any], digits: int = 0) -> str:
    return " ".join(f"{k}={_num(v, digits)}" for k, v in sorted(values.items())) or "-"


def gateway_table(rows: list[dict[str, Any]]) -> Table | None:
    gateways = [r for r in rows if r.get("gateway")]
    if not gateways:
        return None
    table = Table("run / url", "in flight", "queued", "wait p95 s", "sessions",
                  "session wait p95 s", "told to retry", "stripped", "rejected",
                  "locality warn", "upstream failures", title="gateway (last interval)",
                  title_justify="left")
    for row in gateways:
        g = row["gateway"]
        table.add_row(row["name"], _lanes(g["inflight"]), _lanes(g["queue_depth"]),
                      _lanes(g["wait_p95_s"], 3), _lanes(g.get("sessions") or {}),
                      _num(g.get("session_wait_p95_s"), 3),
                      _num(g.get("session_refusals"), 0), _num(g["stripped"], 0),
                      _num(g["rejected"], 0), _num(g["locality_warnings"], 0),
                      _lanes(g["upstream_failures"]))
    return table


def host_table(hosts: list[dict[str, Any]]) -> Table:
    table = Table("node", "MemAvailable GiB", "MemFree GiB", "gap GiB", "page cache GiB",
                  "swap used GiB", "load 1/5/15", "age s", title="hosts (UMA gate pair: "
                  "MemAvailable vs MemFree)", title_justify="left")
    for h in hosts:
        if h.get("error") or h.get("pending"):
            table.add_row(h["node"], h.get("error") or "probing ...", *([""] * 6))
            continue
        table.add_row(h["node"], _num(h["mem_available_gib"], 2), _num(h["mem_free_gib"], 2),
                      _num(h["uma_gap_gib"], 2), _num(h["page_cache_gib"], 2),
                      _num(h["swap_used_gib"], 2), " ".join(f"{x:.2f}" for x in h["load"]),
                      _num(h.get("age_s"), 0))
    return table


def render(sample: dict[str, Any] | None, view: str, interval_s: float) -> RenderableType:
    head = Text(f"sm121 top · every {interval_s:g} s · view: {view} · {KEYS_HELP}",
                style="bold")
    if sample is None:
        return Group(head, Text("sampling ..."))
    parts: list[RenderableType] = [head, Text(sample["time"], style="dim")]
    rows = sample["targets"]
    if view == "runs":
        parts.append(engine_table(rows))
        gateway = gateway_table(rows)
        if gateway is not None:
            parts.append(gateway)
    else:
        parts.append(host_table(sample["hosts"]))
    errors = [e for r in rows for e in r["errors"]]
    parts += [Text(e, style="red") for e in errors]
    return Group(*parts)
