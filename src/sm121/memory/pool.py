"""From KV bytes to the KV pool vLLM reports: blocks, tokens, concurrency, largest context.

vLLM divides the KV budget into blocks of `block_size` tokens across every layer of the
rank, then reports the pool as (max concurrency at max-model-len) x max-model-len, where a
request at max-model-len takes whole blocks. So the reported token count depends on the
block size and on whether max-model-len is a multiple of it, not only on bytes per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sm121.memory.kv import KvLayout


@dataclass(frozen=True)
class Pool:
    kv_bytes: int
    block_size: int
    num_blocks: int  # for the full-attention layers; the whole pool if there are no windows
    tokens: int  # as vLLM logs it: concurrency x max-model-len
    max_concurrency: float  # requests at max-model-len that fit at once
    max_model_len: int
    largest_context: int  # one request alone: the longest context whose KV fits


def request_bytes(layout: KvLayout, context: int, block_size: int, in_flight: int) -> float:
    """KV one request of `context` tokens holds on this rank, in whole blocks.

    A sliding-window layer keeps the last window-1 tokens plus the tokens scheduled but not
    yet settled (at most max-num-batched-tokens), and one extra block because the window
    need not start at a block boundary."""
    blocks = math.ceil(math.ceil(context / layout.dcp) / block_size)
    total = layout.full_bytes_per_token * blocks * block_size
    for window, per_token in layout.sliding:
        held = min(window - 1 + in_flight, context)
        total += per_token * (math.ceil(held / block_size) + 1) * block_size
    for tokens_per_state, state_bytes in layout.compressed:
        total += blocks * max(1, block_size // tokens_per_state) * state_bytes
    return total


def kv_pool(layout: KvLayout, kv_bytes: int, block_size: int, max_model_len: int,
            in_flight: int) -> Pool:
    if not layout.sliding and not layout.compressed:
        # Uniform layers: vLLM's exact arithmetic (floor to whole blocks, whole blocks per
        # request), so the prediction can match the engine's log to the token.
        block_bytes = layout.full_bytes_per_token * block_size
        num_blocks = int(kv_bytes // round(block_bytes)) if block_bytes else 0
        per_request = math.ceil(math.ceil(max_model_len / layout.dcp) / block_size)
        concurrency = num_blocks / per_request if per_request else 0.0
    else:
        # Hybrid: the engine groups layers and shares one block pool; the byte ratio is the
        # same up to block rounding.
        per_request_bytes = request_bytes(layout, max_model_len, block_size, in_flight)
        concurrency = kv_bytes / per_request_bytes if per_request_bytes else 0.0
        bpt = layout.bytes_per_token
        num_blocks = int(kv_bytes // (bpt * block_size)) if bpt else 0
    return Pool(
        kv_bytes=kv_bytes, block_size=block_size, num_blocks=num_blocks,
        tokens=int(concurrency * max_model_len), max_concurrency=concurrency,
        max_model_len=max_model_len,
        largest_context=largest_context(layout, kv_bytes, block_size, in_flight),
    )


def largest_context(layout: KvLayout, kv_bytes: int, block_size: int, in_flight: int,
                    limit: int = 1 << 26) -> int:
    """The longest single request whose KV fits in `kv_bytes` (binary search: monotone)."""
    if kv_bytes <= 0 or request_bytes(layout, 1, block_size, in_flight) > kv_bytes:
        return 0
    low, high = 1, limit
    while low < high:
        mid = (low + high + 1) // 2
        if request_bytes(layout, mid, block_size, in_flight) <= kv_bytes:
            low = mid
        else:
            high = mid - 1
    return low


def kv_bytes_for(layout: KvLayout, requests: int, context: int, block_size: int,
                 in_flight: int) -> float:
    """KV needed to hold `requests` requests of `context` tokens at once."""
    return requests * request_bytes(layout, context, block_size, in_flight)
