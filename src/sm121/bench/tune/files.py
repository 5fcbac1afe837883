"""The results files tune reads back, typed as far as tune reads them: the A/B of its arms
(its boots and repetitions) and the knee's run (its server, boot and summary). Unknown keys
are kept, so older files read."""

from __future__ import annotations

from pydantic import Field, JsonValue

from sm121.bench.scenarios.agents.models import AgentsAbEntry
from sm121.open_model import Open


class BootTimings(Open):
    first_generation_s: float | None = None


class BootFacts(Open):
    kv_pool_tokens: int | None = None


class AbBoot(Open):
    """One boot of the A/B: its arm, its time to a first generation, its KV pool."""

    name: str | None = None
    timings: BootTimings = Field(default_factory=BootTimings)
    boot: BootFacts | None = None


class AbFile(Open):
    """The A/B of tune's arms (ab-agents.json), as measured so far."""

    boots: list[AbBoot] = Field(default_factory=list)
    samples: list[AgentsAbEntry] = Field(default_factory=list)


class ServerInfo(Open):
    version: JsonValue = None  # a string, or the engine's JSON (as text or as an object)


class KneeBoot(Open):
    timings: BootTimings = Field(default_factory=BootTimings)


Number = int | float  # as stored: a step or batch prints as it was written


class KneeRow(Open):
    """One step size (prefill) or batch (decode): the median rate over reps and its range."""

    step: Number | None = None
    batch: Number | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None


class KneePoint(Open):
    """Where a curve bends: the knee (prefill) or the saturation batch (decode)."""

    knee_at: Number | None = None
    knee_rate: float | None = None
    peak: float | None = None
    peak_at: Number | None = None
    saturated: bool | None = None


class KneeWindow(Open):
    """One timing window's curves (the engine's histogram, or the client's TTFT)."""

    prefill: list[KneeRow] = Field(default_factory=list)
    decode: list[KneeRow] = Field(default_factory=list)
    knee: KneePoint = Field(default_factory=KneePoint)
    decode_saturation: KneePoint = Field(default_factory=KneePoint)


class KneeCurves(Open):
    """The knee scenario's summary as tune's report reads it."""

    engine: KneeWindow = Field(default_factory=KneeWindow)
    client: KneeWindow = Field(default_factory=KneeWindow)
    reps: int | None = None


class KneeFile(Open):
    """The knee's results file: its status, server and boot, and its curves."""

    status: str | None = None
    server: ServerInfo = Field(default_factory=ServerInfo)
    boot: KneeBoot | None = None
    summary: KneeCurves = Field(default_factory=KneeCurves)
