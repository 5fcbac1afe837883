"""Prompts from a trace's blocks, and the reuse the trace implies.

Every hash id becomes a fixed run of tokens (drawn from ids the server's own tokenizer gave
for plain text, seeded by the run's salt and the id), so two prompts that share ids share
tokens and the engine's prefix cache sees exactly the trace's reuse; another run's salt gives
other tokens, so runs never hit each other's cache. `block_tokens` scales every length (512:
the trace as recorded; 128: a quarter of each prompt, the same reuse in blocks).

`Reuse` predicts what an ideal prefix cache (nothing evicted, every earlier prompt already
prefilled) would hit: the longest prefix of a prompt whose blocks, with all that comes before
them, an earlier prompt computed, in whole engine blocks, and never the prompt's last token
(the engine computes at least one)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from sm121.bench.scenarios.trace.format import TRACE_BLOCK, TraceRequest


def scaled_length(request: TraceRequest, block_tokens: int) -> int:
    """The prompt length at `block_tokens` a block: the trace's length scaled, kept inside its
    last block (so the block count, and with it the reuse, is the trace's)."""
    blocks = len(request.hash_ids)
    scaled = round(request.input_length * block_tokens / TRACE_BLOCK)
    return min(max(scaled, (blocks - 1) * block_tokens + 1), blocks * block_tokens)


@dataclass
class BlockTokens:
    """hash id -> its tokens (made once, then reused)."""

    pool: list[int]  # token ids to draw from
    block_tokens: int
    salt: str
    _made: dict[int, list[int]] = field(default_factory=dict)

    def block(self, hash_id: int) -> list[int]:
        if hash_id not in self._made:
            rng = random.Random(f"{self.salt}:{hash_id}")
            # choices, not a choice a token: a long prompt's blocks are made on the event
            # loop between arrivals, and every stream's timestamps wait while they are
            self._made[hash_id] = rng.choices(self.pool, k=self.block_tokens)
        return self._made[hash_id]

    def prompt(self, request: TraceRequest) -> list[int]:
        ids = [t for h in request.hash_ids for t in self.block(h)]
        return ids[:scaled_length(request, self.block_tokens)]


@dataclass
class Reuse:
    """The prefix-cache hits the trace implies, request by request, in arrival order.

    `engine_block`: the engine's KV block size (1 when unknown: hits are not rounded)."""

    block_tokens: int
    engine_block: int = 1
    # a block with everything before it (`chain`) -> the furthest token position an earlier
    # prompt left in the cache inside it
    _cached_to: dict[int, int] = field(default_factory=dict)

    def next(self, request: TraceRequest) -> int:
        """Tokens of this prompt an ideal cache holds now; then this prompt is cached."""
        length = scaled_length(request, self.block_tokens)
        matched = 0
        for index, key in enumerate(chain(request.hash_ids)):
            start = index * self.block_tokens
            end = min(start + self.block_tokens, length)
            reach = self._cached_to.get(key, start)
            matched = min(reach, end)
            if reach < end:
                break
        hits = _whole(min(matched, length - 1), self.engine_block)
        self._remember(request, length)
        return hits

    def _remember(self, request: TraceRequest, length: int) -> None:
        """The engine keeps whole blocks of a computed prompt."""
        kept = _whole(length, self.engine_block)
        for index, key in enumerate(chain(request.hash_ids)):
            start = index * self.block_tokens
            if start >= kept:
                break
            reach = min(start + self.block_tokens, kept)
            self._cached_to[key] = max(self._cached_to.get(key, start), reach)


def implied_hits(requests: list[TraceRequest], block_tokens: int, engine_block: int = 1
                 ) -> list[int]:
    reuse = Reuse(block_tokens, engine_block)
    return [reuse.next(r) for r in requests]


def chain(hash_ids: tuple[int, ...]) -> list[int]:
    """One key per block for the block with every block before it (as the engine's own block
    hashes chain): the same key means the same prefix. Python's hash of int tuples is fixed
    across processes; a 64-bit collision in one trace is negligible."""
    keys, key = [], 0
    for h in hash_ids:
        key = hash((key, h))
        keys.append(key)
    return keys


def _whole(tokens: int, block: int) -> int:
    return max(0, tokens) // block * block


def token_pool(ids: list[int], minimum: int = 8) -> list[int]:
    """Distinct ids of plain text, in a stable order (a run's tokens depend on nothing else)."""
    pool = sorted(set(ids))
    if len(pool) < minimum:
        raise ValueError(f"only {len(pool)} distinct token ids to build prompts from")
    return pool


def blocks_needed(requests: list[TraceRequest]) -> int:
    return len({h for r in requests for h in r.hash_ids})


def trace_reuse_share(requests: list[TraceRequest]) -> float:
    """The share of the trace's blocks an earlier request already had at that prefix (the
    trace's own reuse, lengths aside)."""
    seen: set[int] = set()
    reused = total = 0
    for request in requests:
        for key in chain(request.hash_ids):
            reused += key in seen
            total += 1
            seen.add(key)
    return reused / total if total else math.nan
