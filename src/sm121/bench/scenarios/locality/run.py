"""`locality`: what it costs where a mutating field (a timestamp, a request id) sits in an
append-only multi-turn prompt. For each placement (clean = no field, bottom, middle, top) a
fresh conversation grows turn by turn; each turn's TTFT, its ratio to the clean run's same
turn, and the prefix reuse (usage cached_tokens and the server's prefix-cache counters)."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.prompts import filler
from sm121.bench.scenarios.locality.models import (
    LocalitySample,
    LocalitySettings,
    LocalitySummary,
)
from sm121.bench.scenarios.locality.summary import summarize_locality
from sm121.bench.server import counter_deltas, prefix_reuse, read_counters


def place(placement: str, head: str, body: str, stamp: str) -> str:
    """The prompt with the mutating field at its placement; `head` (the run's salt) stays
    first, so the field at the top still sits inside the first cache block."""
    if placement == "clean":
        return f"{head}{body}"
    if placement == "top":
        return f"{head}{stamp}\n{body}"
    if placement == "middle":
        words = body.split(" ")
        half = len(words) // 2
        return f"{head}{' '.join(words[:half])}\n{stamp}\n{' '.join(words[half:])}"
    if placement == "bottom":
        return f"{head}{body}\n{stamp}"
    raise ValueError(f"unknown placement {placement!r}")


async def locality(ctx: Context, p: LocalitySettings) -> LocalitySummary:
    samples: list[LocalitySample] = []
    for index, placement in enumerate(p.placements):
        ctx.progress(f"locality {placement}", index, len(p.placements))
        samples += await _conversation(ctx, p, placement)
    return summarize_locality(samples)


async def _conversation(ctx: Context, p: LocalitySettings, placement: str
                        ) -> list[LocalitySample]:
    client, tag = ctx.client, ctx.client.new_salt()
    body, turns = filler(p.base_words, seed=1), []
    for turn in range(p.turns):
        prompt = place(placement, f"[{tag}]\n", body, f"[now: {tag}.{turn:04d}]")
        before = await read_counters(client)
        record = await client.complete(prompt, p.max_tokens, f"{placement}-{turn}",
                                       salt=False, extra=client.cache_salt_field(tag))
        deltas = counter_deltas(before, await read_counters(client))
        # the turn as the server said it: no count stays None (not 0); the summary reads it
        # by the run's rule, once every turn of the run is in (summary.py)
        cached, tokens = record.cached_tokens, record.prompt_tokens
        row = LocalitySample(
            placement=placement, turn=turn, ttft_s=record.ttft, prompt_tokens=tokens,
            cached_tokens=cached,
            reuse_usage=cached / tokens if cached is not None and tokens else None,
            reuse_metrics=prefix_reuse(deltas), request=record.to_json(ctx.t0))
        ctx.add(row)
        turns.append(row)
        body += " " + filler(p.append_words, seed=100 + turn)  # append-only growth
    return turns

