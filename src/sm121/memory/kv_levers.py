"""The KV lever's arithmetic, the KV allowance read backwards: the pool a target number of
agents needs, and what a smaller pool than a tuned profile was measured on does to the agents it
held (an H200 profile on an H100), which `plan` and `serve` warn of. Kept apart from the
allowances because they answer "what pool" rather than "how many agents". Pure, no I/O.
"""

from __future__ import annotations

from sm121.memory.capacity_types import SessionShape
from sm121.memory.working_set import blocks_for


def pool_for_agents(agents: int, shape: SessionShape, block_size: int) -> int:
    """The pool in tokens that holds `agents` sessions' working sets and the resident jobs
    (the KV lever's target: GMU, kv-cache-dtype, nodes)."""
    per = shape.working_set().blocks(block_size)
    return (agents * per + blocks_for(shape.resident_long_tokens, block_size)) * block_size


def smaller_pool(tuned_pool_tokens: int, tuned_device: str, tuned_agents: int | None,
                 pool_tokens: int) -> str | None:
    """The warning when the pool at hand is smaller than the one a tuned profile was measured
    on (an H200 profile on an H100): the agents it held scale down with the pool, when KV
    binds. None when the pool at hand is as large."""
    if pool_tokens >= tuned_pool_tokens:
        return None
    share = pool_tokens / tuned_pool_tokens
    held = f" (it held {tuned_agents} agents there)" if tuned_agents is not None else ""
    return (f"this profile was tuned on {tuned_device} with a KV pool of {tuned_pool_tokens:,} "
            f"tokens{held}; the pool here is {pool_tokens:,}, {share:.0%} of it: where KV binds "
            f"it holds {share:.0%} as many sessions (sm121 plan --workload says how many)")
