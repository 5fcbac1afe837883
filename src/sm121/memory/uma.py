"""The UMA gate (vLLM issue 48140): on unified memory, what vLLM's start-up checks will see on
this node, and whether one request at max-model-len survives them.

On GB10 the GPU's "free memory" is the system's. A vLLM that reads MemFree (0.21, the
field's build) books reclaimable page cache as used; one that reads MemAvailable (0.32 on an
integrated GPU) does not. Two checks follow:

1. at start, the free memory it sees must cover GMU x total (vllm/v1/worker/utils.py,
   request_memory), or it refuses before loading anything;
2. after loading and profiling, the KV it finds must hold one request at max-model-len
   (check_enough_kv_cache_memory, memory/startup_check.py). The page cache its own weight
   load created is booked as used by a MemFree reader, so it finds less than the budget:
   the field's three Laguna S 2.1 boots reported 4.22 / 5.18 / 5.34 GiB (anchor RESULTS.md
   section 6). Where boots of the recipe's stack were observed that booking is calibrated from
   them; where a boot of the stack passed at these settings or a longer max-model-len (DS4's
   1M), that boot gives the verdict; else this node's reclaimable page cache stands for the
   booking (an upper estimate, said so).
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel

KIB = 1024
GIB = 1024**3


class GateInput(BaseModel):
    mem_total_kib: int
    mem_free_kib: int
    mem_available_kib: int
    gmu: float
    reads_memfree: bool  # the engine version's reading on unified memory
    version: str  # whose check, for the words
    nominal_kv_gib: float  # the budget with nothing booked
    booked_kv_gib: list[float] = []  # KV found on observed boots with the page cache booked
    need_gib: float  # one request at max-model-len, as the version's check sums it
    max_model_len: int
    bound: str = ""  # a boot of this stack that passed here or at a longer max-model-len
    need_assumed: bool = False  # the need is not measured on this stack
    calibrated: str = ""  # the budget is calibrated from boots of this stack (how)


class GatePrediction(BaseModel):
    reads: str  # "MemFree" or "MemAvailable"
    version: str
    total_gib: float
    requested_gib: float
    free_seen_gib: float  # what the start check sees now
    available_gib: float
    page_cache_gib: float  # reclaimable memory MemFree does not count
    start_passes: bool
    kv_seen_gib: float
    kv_how: str
    need_gib: float
    max_model_len: int
    need_assumed: bool = False
    refuses: bool
    nominal_kv_gib: float  # after drop_caches, or on a MemAvailable reader
    nominal_refuses: bool

    @property
    def will_refuse(self) -> bool:
        return self.refuses


def predict_gate(gate: GateInput) -> GatePrediction:
    total = gate.mem_total_kib * KIB / GIB
    free = gate.mem_free_kib * KIB / GIB
    available = gate.mem_available_kib * KIB / GIB
    cache = max(0.0, available - free)
    requested = gate.gmu * total
    seen = free if gate.reads_memfree else available
    refuses: bool | None = None
    if not gate.reads_memfree:
        kv, how = gate.nominal_kv_gib, "the budget: a MemAvailable reader books no page cache"
    elif gate.bound:
        kv, refuses = gate.nominal_kv_gib, False
        how = (f"{gate.bound}; that boot found its KV with its node's page cache as it was "
               "then: whether this vLLM books page cache on this stack was not measured")
    elif gate.booked_kv_gib:
        kv = statistics.median(gate.booked_kv_gib)
        how = (f"the median of the observed boots with the load's page cache booked "
               f"({' / '.join(f'{b:.2f}' for b in gate.booked_kv_gib)} GiB)")
    elif gate.calibrated:
        kv = gate.nominal_kv_gib
        how = (f"the budget, {gate.calibrated}: the boots of this stack found their KV with their "
               "page cache as it was then and showed no booking; this node's "
               f"{cache:.1f} GiB of page cache booked on top was not measured on this stack")
    else:
        kv = max(0.0, gate.nominal_kv_gib - cache)  # nothing found is 0, never negative
        how = (f"estimated: the budget {gate.nominal_kv_gib:.2f} GiB less this node's {cache:.1f} "
               "GiB of reclaimable page cache (no boot of this stack measured the booking; an "
               "upper estimate of it)")
    return GatePrediction(
        reads="MemFree" if gate.reads_memfree else "MemAvailable", version=gate.version,
        total_gib=total, requested_gib=requested, free_seen_gib=seen, available_gib=available,
        page_cache_gib=cache, start_passes=seen >= requested, kv_seen_gib=kv, kv_how=how,
        need_gib=gate.need_gib, max_model_len=gate.max_model_len, need_assumed=gate.need_assumed,
        refuses=gate.need_gib > kv if refuses is None else refuses,
        nominal_kv_gib=gate.nominal_kv_gib,
        nominal_refuses=gate.need_gib > gate.nominal_kv_gib)


def describe(prediction: GatePrediction) -> str:
    p = prediction
    verdict = "will refuse" if p.refuses else "passes"
    needs = ("would need (assumed, not measured on this stack)" if p.need_assumed
             else "needs")
    start = ("" if p.start_passes else
             " (below the request; the field's Laguna boots with the page cache kept passed the start, "
             "so it is not counted as a refusal)")
    return (f"a vLLM {p.version} reading {p.reads} {verdict}: one request at max-model-len "
            f"{p.max_model_len:,} {needs} {p.need_gib:.2f} GiB of KV in its start-up check, it "
            f"finds {p.kv_seen_gib:.2f} GiB ({p.kv_how}); at start it sees "
            f"{p.free_seen_gib:.1f} GiB free of the {p.requested_gib:.1f} GiB requested{start} "
            f"(MemAvailable {p.available_gib:.1f} GiB; {p.page_cache_gib:.1f} GiB is "
            "reclaimable page cache)")
