"""Calibration: what an engine really reported at boot, stored per recipe and profile.

An observation comes from a run's engine log (KV pool tokens, max concurrency, KV memory,
weights) together with the settings that run used (sizing.run_check reads both). The planner
reports its prediction against it, and uses it: the reserve it implies replaces the
uncalibrated estimate. Stored under $SM121_HOME/calibration/<recipe>/<profile>.json (read and
written by sizing/calibration_store.py); the field's own figures ship with sm121 as built-in
observations (memory/field.py), each with the stack it was measured on and its source."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from sm121.memory.provenance import Source, Stack


class Observation(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)  # read back from disk: finite numbers

    recipe: str
    profile: str | None
    source: str  # a run id, or the measurement it comes from
    gmu: float | None = None
    node_total_gib: float | None = None
    weights_gib: float | None = None
    kv_gib: float | None = None  # KV memory the engine reported
    kv_explicit: bool = False  # the KV size was set, not derived from GMU
    pool_tokens: int | None = None
    max_concurrency: float | None = None
    max_model_len: int | None = None
    batched_tokens: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    # vLLM's start-up check: "X GiB KV cache is needed" for one request at max_model_len
    need_gib: float | None = None
    outcome: Literal["booted", "refused"] | None = None  # None: booted if a pool was logged
    # The KV reported had the page cache of the engine's own weight load booked as used (a
    # build reading MemFree on unified memory): it measures that booking, not the reserve.
    page_cache_booked: bool = False
    note: str = ""
    # Provenance (the field's figures; a run's own boot leaves them empty: its recipe is its
    # stack). `assumed` names the fields the source does not give; every other set field is
    # measured.
    stack: Stack | None = None
    origin: Source | None = None
    assumed: tuple[str, ...] = ()

    def tag(self, name: str) -> str:
        return "assumed" if name in self.assumed else "measured"

    @property
    def booted(self) -> bool | None:
        if self.outcome is not None:
            return self.outcome == "booted"
        return True if self.pool_tokens is not None else None

    def reserve_gib(self) -> float | None:
        """What the engine kept for itself beyond weights and KV (GMU mode only)."""
        if self.page_cache_booked or self.kv_explicit or None in (
                self.gmu, self.node_total_gib, self.weights_gib, self.kv_gib):
            return None
        assert self.gmu is not None and self.node_total_gib is not None
        assert self.weights_gib is not None and self.kv_gib is not None
        return self.gmu * self.node_total_gib - self.weights_gib - self.kv_gib

