"""vLLM's own start-up KV check, per engine version: the KV one request at max-model-len
needs, as the engine computes it, against the memory it found for KV.

Read from vLLM's source, `vllm/v1/core/kv_cache_utils.py` (check_enough_kv_cache_memory) and
`vllm/v1/kv_cache_interface.py` (each spec's max_memory_usage_bytes):

    need = sum over every KV layer of that layer's max_memory_usage_bytes
      full attention (MLA too): cdiv(cdiv(max_model_len, dcp), block) x page
      sliding window:          (cdiv(min(window - 1 + in_flight, max_model_len), block) + 1) x page
      compressed (DeepSeek-V4, tokens_per_state r): cdiv(max_model_len, block) x page, where a
                               page holds block / r states
    refuses when need > available (0.32: available less one pool block, the null block)

This is a different number from the pool's capacity: the pool divides the KV memory among
every group's blocks, the check adds each layer's worst case. For one uniform group the two
agree; a model with several groups or compressed layers can need far more per request in the
check than its pool's bytes per token suggest, which is why both are reported.

What differs by version (read from each version's source):
- in_flight, the tokens a sliding-window layer holds beyond its window: 0.21 counts
  max-num-batched-tokens; 0.32 counts max_in_flight_tokens = concurrent batches (2 with
  async scheduling, its default) x max-num-batched-tokens.
- 0.32 reserves the null block the block pool holds back before comparing; 0.21 does not.
- on unified memory (GB10) 0.21 reads the GPU's free memory, which is MemFree, so the page
  cache its own weight load creates is booked as used (vLLM #48140); 0.32 reads MemAvailable
  on an integrated GPU (vllm/utils/mem_utils.py, MemorySnapshot: psutil available).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pydantic import BaseModel

from sm121.memory.kv import KvLayout


@dataclass(frozen=True)
class CheckRules:
    """How one vLLM version's start-up check counts."""

    version: str  # the version the rules were read from
    in_flight_batches: int  # sliding windows hold this many x max-num-batched-tokens extra
    null_block: bool  # one pool block is held back before the comparison
    reads_memfree_on_uma: bool  # the budget on unified memory books page cache as used
    how: str  # where the version came from


def rules_for(version: str | None) -> CheckRules:
    """The rules of the version named (`0.21.1rc1.dev339 + DSpark overlay` reads as 0.21);
    an unknown version gets 0.21's, the field's build, and says so."""
    match = re.match(r"\s*v?(\d+)\.(\d+)", version or "")
    if match is None:
        return CheckRules("0.21", 1, False, True,
                          "engine version not given: assumed 0.21's check (the field's build)")
    major, minor = int(match.group(1)), int(match.group(2))
    if (major, minor) >= (0, 32):
        return CheckRules("0.32", 2, True, False, f"engine version {version}: 0.32's check")
    return CheckRules("0.21", 1, False, True, f"engine version {version}: 0.21's check")


def need_bytes(layout: KvLayout, max_model_len: int, block_size: int, batched_tokens: int,
               rules: CheckRules) -> int:
    """One request at max-model-len, summed over the layers as the version's check sums."""
    in_flight = rules.in_flight_batches * batched_tokens
    full_blocks = math.ceil(math.ceil(max_model_len / layout.dcp) / block_size)
    total = full_blocks * block_size * layout.full_bytes_per_token
    for window, per_token in layout.sliding:
        held = min(window - 1 + in_flight, max_model_len)
        total += (math.ceil(held / block_size) + 1) * block_size * per_token
    for tokens_per_state, state_bytes in layout.compressed:
        states_per_page = max(1, block_size // tokens_per_state)
        total += math.ceil(max_model_len / block_size) * states_per_page * state_bytes
    return int(total)


def largest_passing(layout: KvLayout, available: int, block_size: int, batched_tokens: int,
                    rules: CheckRules, limit: int = 1 << 26) -> int:
    """The longest max-model-len the check passes with `available` bytes (vLLM's own
    estimate_max_model_len is the same binary search)."""
    if available <= 0 or need_bytes(layout, 1, block_size, batched_tokens, rules) > available:
        return 0
    low, high = 1, limit
    while low < high:
        mid = (low + high + 1) // 2
        if need_bytes(layout, mid, block_size, batched_tokens, rules) <= available:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass(frozen=True)
class NeedModel:
    """How the need is computed: from the model's layers, or calibrated per token from a
    refusal the engine logged (its "X GiB KV cache is needed" at a known max-model-len)."""

    per_token_bytes: float | None  # calibrated: need / max-model-len of the observation
    how: str
    assumed: bool = False  # not measured on this stack (e.g. the pool's bytes per token)

    def need(self, layout: KvLayout | None, max_model_len: int, block_size: int,
             batched_tokens: int, rules: CheckRules) -> int | None:
        if self.per_token_bytes is not None:
            return int(self.per_token_bytes * max_model_len)
        if layout is None:
            return None
        return need_bytes(layout, max_model_len, block_size, batched_tokens, rules)

    def largest(self, layout: KvLayout | None, available: int, block_size: int,
                batched_tokens: int, rules: CheckRules) -> int | None:
        if self.per_token_bytes is not None:
            return max(0, int(available / self.per_token_bytes))
        if layout is None:
            return None
        return largest_passing(layout, available, block_size, batched_tokens, rules)


def usable_for_check(available: int, layout: KvLayout | None, block_size: int,
                     rules: CheckRules) -> int:
    """0.32 compares against the memory less one pool block (the null block)."""
    if not rules.null_block or layout is None:
        return available
    return available - int(layout.bytes_per_token * block_size)


class StartupCheck(BaseModel):
    rules: str  # which version's check, and why
    need_gib: float | None
    need_how: str
    nominal_kv_gib: float  # the budget with no page cache booked (caches dropped, MemAvailable)
    booked_kv_gib: list[float] = []  # the budget on each observed boot with the cache booked
    booked_how: str = ""
    budget_gib: float  # what the verdict compares with
    budget_how: str
    refuses: bool | None  # None: the need is unknown
    largest_context: int | None  # the longest max-model-len the check passes at budget_gib
    nominal_largest_context: int | None = None  # the same with nothing booked
    refuses_on: int = 0  # of the observed booked boots, how many this need would refuse
    observed: str = ""  # an observed boot at these same settings, which wins over the model
    need_assumed: bool = False  # the need is not measured on this stack (said, never "measured")
    # A boot of this stack at a max-model-len >= this one, same chunk, that passed the check with
    # no more KV than this budget: the need only grows with max-model-len, so this one passes.
    bound: str = ""
    booking_note: str = ""  # the booking inferred against the field's own figure, when they differ
    # The budget is calibrated from boots of this stack that reported what they found (no
    # booking measured): they already include whatever that stack's start-up books.
    calibrated_from_boots: str = ""

    @property
    def verdict(self) -> str:
        if self.refuses is None:
            return "unknown"
        return "refuses" if self.refuses else "boots"
