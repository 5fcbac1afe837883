"""The results files tune reads back, in their owners' models: the A/B of its arms (the agents
scenario's A/B entries, and each boot as bench's `BootRecord`) and the knee's run (the knee
scenario's summary, the server as the runner recorded it, the boot it ran on, and what tune
counted on its engine while it was up). Tune re-types none of them; unknown keys are kept, so
older files read."""

from __future__ import annotations

from pydantic import Field

from sm121.bench.boot import BootRecord
from sm121.bench.result_models import AbBootName, ServerInfo
from sm121.bench.scenarios.agents.models import AgentsAbEntry
from sm121.bench.scenarios.knee.models import KneeSummary
from sm121.bench.tune.first_prompt import CountedPrompt
from sm121.open_model import Open


class AbBoot(BootRecord, AbBootName):
    """One boot of the A/B (`ab.run_profile`): its record, under its arm's name (an A/B's
    profile name, checked where the file is read)."""


class AbFile(Open):
    """The A/B of tune's arms (ab-agents.json), as measured so far."""

    boots: list[AbBoot] = Field(default_factory=list)
    samples: list[AgentsAbEntry] = Field(default_factory=list)


class KneeFile(Open):
    """The knee's results file (`knee.on_recipe`): its status, server and boot, its curves,
    and the workload's first prompt as its engine counted it (tune/first_prompt.py; None in a
    knee measured before tune counted it, or by `bench knee`)."""

    status: str | None = None
    server: ServerInfo = Field(default_factory=ServerInfo)
    boot: BootRecord | None = None
    summary: KneeSummary = Field(default_factory=KneeSummary)
    first_prompt: CountedPrompt | None = None
