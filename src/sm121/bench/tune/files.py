"""The results files tune reads back, typed as far as tune reads them: the A/B of its arms
(its boots and repetitions) and the knee's run (its server, boot and summary). Unknown keys
are kept, so older files read."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from sm121.bench.agents.entries import AbEntry


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class BootTimings(_Open):
    first_generation_s: float | None = None


class BootFacts(_Open):
    kv_pool_tokens: int | None = None


class AbBoot(_Open):
    """One boot of the A/B: its arm, its time to a first generation, its KV pool."""

    name: str | None = None
    timings: BootTimings = Field(default_factory=BootTimings)
    boot: BootFacts | None = None


class AbFile(_Open):
    """The A/B of tune's arms (ab-agents.json), as measured so far."""

    boots: list[AbBoot] = Field(default_factory=list)
    samples: list[AbEntry] = Field(default_factory=list)


class ServerInfo(_Open):
    version: JsonValue = None  # a string, or the engine's JSON (as text or as an object)


class KneeBoot(_Open):
    timings: BootTimings = Field(default_factory=BootTimings)


class KneeFile(_Open):
    """The knee's results file: its status, server and boot, and its summary (the knee
    scenario's, read by the report's plots and table as stored)."""

    status: str | None = None
    server: ServerInfo = Field(default_factory=ServerInfo)
    boot: KneeBoot | None = None
    summary: dict[str, Any] = Field(default_factory=dict)
