"""One exclusive long prefill per boot: the workload's own background prompt, as long as the
background job inside the agents runs (the workload fitted to the served window the same
way), sent alone to the idle engine with one output token; its TTFT is the prefill's time.

Why beside the in-situ price (the background job's TTFT inside the agents runs,
tune/choose.price_prefill): in situ, the prefill shares every step with the agents' decodes,
so its cost mixes the step budget's own price with the sharing. The H200 sitting of
2026-12-05 (docs/results/gpu-h200/tune-capacity) paid 15.7-17.0% in situ for every arm that
admitted the agents, whatever its step budget, so the in-situ number could not say what the
step budget alone costs. Alone on the engine, only the step budget (and the threshold's
chunking) differs between arms. The prompt opens with a fresh salt tag, so no block of it is
in the prefix cache."""

from __future__ import annotations

import asyncio

from sm121.bench.boot import Boot
from sm121.bench.client import BenchClient
from sm121.bench.scenarios.agents.params import AgentRunParams
from sm121.bench.scenarios.agents.sessions import exclusive_prefill
from sm121.bench.tune.result import ExclusivePrefill
from sm121.errors import Sm121Error
from sm121.progress import Say


def measure_exclusive(boot: Boot, params: AgentRunParams, say: Say) -> ExclusivePrefill | None:
    """The boot's exclusive long prefill; None when the workload has no background job. A
    failed request is recorded with its error (the arm's other measurements stand)."""
    try:
        found = asyncio.run(_measure(boot.plan.base_url, boot.plan.readiness.model, params))
    except Sm121Error as exc:
        say(f"  exclusive long prefill failed: {exc.message}")
        return ExclusivePrefill(run_id=boot.run_id, error=exc.message[:300])
    if found is None:
        return None
    tokens, ttft = found
    say(f"  exclusive long prefill: {tokens or '?'} tokens, TTFT {ttft:.2f} s"
        if ttft is not None else "  exclusive long prefill: no first token")
    return ExclusivePrefill(run_id=boot.run_id, prompt_tokens=tokens, ttft_s=ttft,
                            error=None if ttft is not None else "no first token")


async def _measure(base_url: str, model: str, params: AgentRunParams
                   ) -> tuple[int | None, float | None] | None:
    async with BenchClient(base_url, model, api="chat") as client:
        return await exclusive_prefill(client, params.workload, params.turns)
