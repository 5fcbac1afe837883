"""The UMA gate (vLLM issue 48140): on unified memory, what vLLM's start-up memory check will
see, and whether the KV the profile needs survives it.

On GB10 the GPU's "free memory" is the system's. A vLLM that reads MemFree (the field's
build) books reclaimable page cache as used; one that reads MemAvailable does not. The
engine takes at most what it sees free, places weights and the reserve, and gives KV the
rest; it refuses to start when one request at max-model-len does not fit:

    KV seen = min(GMU x total, free as seen) - weights - reserve
    refuses when KV seen < KV for one request at max-model-len

Reading the weights fills the page cache, so a warm node can refuse the long contexts that a
node with dropped caches serves: the field saw 32K-64K boot and 128K-262K refuse.
"""

from __future__ import annotations

from pydantic import BaseModel

KIB = 1024
GIB = 1024**3


class GateInput(BaseModel):
    mem_total_kib: int
    mem_free_kib: int
    mem_available_kib: int
    gmu: float
    weights_gib: float
    reserve_gib: float
    kv_needed_gib: float  # one request at max-model-len
    max_model_len: int


class GateView(BaseModel):
    reads: str  # "MemFree" or "MemAvailable"
    free_seen_gib: float
    budget_gib: float  # min(GMU x total, free seen)
    kv_seen_gib: float
    refuses: bool


class GatePrediction(BaseModel):
    total_gib: float
    requested_gib: float
    page_cache_gib: float  # reclaimable memory MemFree does not count
    kv_needed_gib: float
    max_model_len: int
    memfree: GateView
    memavailable: GateView
    after_drop_caches: GateView

    @property
    def will_refuse(self) -> bool:
        return self.memfree.refuses


def predict_gate(gate: GateInput) -> GatePrediction:
    total = gate.mem_total_kib * KIB / GIB
    free = gate.mem_free_kib * KIB / GIB
    available = gate.mem_available_kib * KIB / GIB
    requested = gate.gmu * total
    return GatePrediction(
        total_gib=total, requested_gib=requested, page_cache_gib=max(0.0, available - free),
        kv_needed_gib=gate.kv_needed_gib, max_model_len=gate.max_model_len,
        memfree=_view("MemFree", free, requested, gate),
        memavailable=_view("MemAvailable", available, requested, gate),
        # drop_caches turns the reclaimable cache into free memory: MemFree ~ MemAvailable
        after_drop_caches=_view("MemFree after drop_caches", available, requested, gate),
    )


def _view(reads: str, free: float, requested: float, gate: GateInput) -> GateView:
    budget = min(requested, free)
    kv = budget - gate.weights_gib - gate.reserve_gib
    return GateView(reads=reads, free_seen_gib=free, budget_gib=budget, kv_seen_gib=kv,
                    refuses=kv < gate.kv_needed_gib)


def describe(prediction: GatePrediction) -> str:
    view = prediction.memfree
    verdict = "will refuse" if view.refuses else "passes"
    return (f"a vLLM reading MemFree {verdict}: it sees {view.free_seen_gib:.1f} GiB free "
            f"(MemAvailable {prediction.memavailable.free_seen_gib:.1f} GiB; "
            f"{prediction.page_cache_gib:.1f} GiB is reclaimable page cache), so of the "
            f"{prediction.requested_gib:.1f} GiB requested it finds {view.budget_gib:.1f} GiB and "
            f"{view.kv_seen_gib:.2f} GiB for KV, against {prediction.kv_needed_gib:.2f} GiB "
            f"needed for one request at max-model-len {prediction.max_model_len:,}")
