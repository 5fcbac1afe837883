"""What `sm121 serve` prints and starts once an engine is ready (plain or supervised): its
summary, then a gateway in front of it, or its place behind a running gateway."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from rich.text import Text

from sm121.cli.output import console
from sm121.cli.progress import LongWait
from sm121.display import plain
from sm121.plan.model import ServePlan
from sm121.runs.state import RunInfo


def after_ready(run: RunInfo, plan: ServePlan, gateway_port: int | None,
                join: Path | None) -> None:
    """The summary, then the gateway: a new one on gateway_port, or RUN's that `join` names."""
    if gateway_port is not None:
        url = start_gateway_for(run, plan, gateway_port)
        print_summary(run, url)
        warn_smaller_pool(run, plan)
        console.print(f"gateway (request policy, admission, metrics at {url}/metrics):\n"
                      f"  {url}/v1  (agents should use this URL)\n"
                      f"more engines behind it: sm121 serve ... --gateway-join {run.run_id}",
                      highlight=False)
        console.print(f"  session admission {admission_verdict(url)}", highlight=False,
                      markup=False)
        return
    print_summary(run)
    warn_smaller_pool(run, plan)
    if join is not None:
        join_gateway(run, plan, join)


def admission_verdict(url: str, wait_s: float = 3.0) -> str:
    """The gateway's word on session admission (on or off, and why: docs/sessions.md), once
    its first health round has read the engine's KV pool; best effort."""
    import time

    from sm121.engines.client_sync import SyncEngineClient
    from sm121.engines.engine_error import EngineError

    why, deadline = "unknown (the gateway did not say)", time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            admission = SyncEngineClient(url, timeout_s=2).get_json("/sm121/sessions")
        except (EngineError, OSError, ValueError):
            break
        verdict = admission.get("admission") or {}
        why = "".join(c for c in str(verdict.get("why", why)) if c.isprintable())[:300]
        if verdict.get("on") or "yet" not in why:
            break
        time.sleep(0.3)
    return why + f" (sm121 gateway sessions --url {url})"


def warn_smaller_pool(run: RunInfo, plan: ServePlan) -> None:
    """A tuned profile on a smaller pool than it was measured on holds fewer agents."""
    from sm121.memory.kv_levers import smaller_pool

    tuned, pool = plan.measured_on, run.boot.kv_pool_tokens
    if tuned is None or pool is None:
        return
    if (line := smaller_pool(tuned.pool_tokens, tuned.device, tuned.agents, pool)) is not None:
        from sm121.display import plain

        console.print(plain(f"warning: {line}", style="yellow"))


def start_gateway_for(run: RunInfo, plan: ServePlan, port: int) -> str:
    """The gateway in front of this run (serving.gateway_process.start_in_front); its URL."""
    from sm121.serving.gateway_process import start_in_front

    with LongWait("gateway") as wait:
        url = start_in_front(run, plan, port, progress=wait.progress)
    return str(url)


def gateway_registry(run_id: str) -> Path:
    """The upstreams file of RUN's gateway, checked before anything starts."""
    from sm121.serving.join import joinable

    return joinable(run_id)


def join_gateway(run: RunInfo, plan: ServePlan, path: Path) -> None:
    from sm121.serving.join import join_run

    url = join_run(run, plan, path)
    console.print(f"joined {url}: it routes {run.model} to this engine "
                  f"(check {url}/sm121/upstreams)", highlight=False)


def print_summary(run: RunInfo, gateway_url: str | None = None) -> None:
    """The start-up summary; with a gateway, the call goes to it (the URL agents use)."""
    t, boot = run.timings, run.boot
    console.print(Text.assemble(("ready", "bold green"),
                                plain(f" {run.run_id}: {run.recipe} profile {run.profile}")))
    console.print(f"  process start   {t.process_started_s:8.2f} s")
    console.print(f"  port open       {t.port_open_s:8.2f} s")
    console.print(f"  first generation{t.first_generation_s:8.2f} s")
    if boot.kv_pool_tokens is not None:
        console.print(f"  KV pool         {boot.kv_pool_tokens:,} tokens")
    if boot.max_concurrency is not None:
        console.print(f"  max concurrency {boot.max_concurrency:.2f}x at "
                      f"{boot.max_concurrency_at_tokens:,} tokens per request")
    body = shlex.quote(json.dumps({"model": run.model, "max_tokens": 16,
                                   "messages": [{"role": "user", "content": "Hello"}]}))
    console.print(f"\ncall it:\n  curl -s {gateway_url or run.base_url}/v1/chat/completions "
                  f"-H 'Content-Type: application/json' -d {body}", highlight=False, soft_wrap=True)
    console.print(f"stop it:\n  sm121 stop {run.run_id}", highlight=False)
