"""`locality`: what it costs where a mutating field (a timestamp, a request id) sits in an
append-only multi-turn prompt. For each placement (clean = no field, bottom, middle, top) a
fresh conversation grows turn by turn; each turn's TTFT, its ratio to the clean run's same
turn, and the prefix reuse (usage cached_tokens and the server's prefix-cache counters)."""

from __future__ import annotations

from sm121.bench.context import Context
from sm121.bench.prompts import filler
from sm121.bench.scenarios.locality.models import (
    LocalityReading,
    LocalitySample,
    LocalitySettings,
    LocalitySummary,
    LocalityTurn,
)
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
    runs: dict[str, list[LocalitySample]] = {}
    for index, placement in enumerate(p.placements):
        ctx.progress(f"locality {placement}", index, len(p.placements))
        runs[placement] = await _conversation(ctx, p, placement)
    return LocalitySummary(placements={name: _summary(turns, runs.get("clean"))
                                       for name, turns in runs.items()})


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
        row = LocalitySample(
            placement=placement, turn=turn, ttft_s=record.ttft,
            prompt_tokens=record.prompt_tokens, cached_tokens=record.cached_tokens,
            reuse_usage=(record.cached_tokens or 0) / record.prompt_tokens
            if record.prompt_tokens else None, reuse_metrics=prefix_reuse(deltas),
            request=record.to_json(ctx.t0))
        ctx.add(row)
        turns.append(row)
        body += " " + filler(p.append_words, seed=100 + turn)  # append-only growth
    return turns


def _summary(turns: list[LocalitySample], clean: list[LocalitySample] | None
             ) -> list[LocalityTurn]:
    rows = []
    for row in turns:
        base = clean[row.turn].ttft_s if clean and row.turn < len(clean) else None
        reading = {name: getattr(row, name) for name in LocalityReading.model_fields}
        ratio = row.ttft_s / base if base and row.ttft_s is not None else None
        rows.append(LocalityTurn(**reading, ratio_to_clean=ratio))
    return rows
