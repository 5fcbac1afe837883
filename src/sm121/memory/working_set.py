"""A session's working set: the KV blocks its cached prefix holds between its turns.

An agent is idle between its turns (tool calls), yet its next turn reuses its whole prefix only
if the engine kept it. So the KV pool must hold every active session's working set plus what
the long jobs hold; past that, idle sessions' prefixes are evicted, every turn re-prefills its
whole context and all sessions slow down together (DOMAIN.md, "Agent capacity is a memory
question first"). This module is the one place that turns a session's tokens into pool blocks
for that rule: the capacity model and the gateway's session admission both count with it.
Pure arithmetic, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def blocks_for(tokens: int, block_size: int) -> int:
    """Whole KV blocks that `tokens` tokens of one request hold (vLLM allocates by block)."""
    if block_size <= 0:
        raise ValueError(f"block size must be positive, got {block_size}")
    return math.ceil(max(0, tokens) / block_size)


@dataclass(frozen=True)
class WorkingSet:
    """What one session keeps in the pool between turns, and what its next turn adds."""

    prompt_tokens: int  # the session's context at its last turn (its last prompt)
    growth_tokens: int = 0  # expected growth by the next turn: the reply plus the new input

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.growth_tokens

    def blocks(self, block_size: int) -> int:
        return blocks_for(self.tokens, block_size)


def sessions_that_fit(pool_blocks: int, reserve_blocks: int, per_session_blocks: int) -> int:
    """How many sessions of `per_session_blocks` fit in the pool less a reserve (long jobs,
    new turns in flight). Zero when the reserve alone fills the pool."""
    if per_session_blocks <= 0:
        raise ValueError(f"a session's working set must hold at least one block, got {per_session_blocks}")
    return max(0, (pool_blocks - reserve_blocks) // per_session_blocks)
