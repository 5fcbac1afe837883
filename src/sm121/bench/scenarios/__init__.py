"""The scenario table, pip-style: name -> (module, class, one-line summary). A scenario is
one package here plus one line in `TABLE`; its module is imported the first time the
scenario is used (run, reported, or its command's --help read), so `sm121 bench --help`
lists every scenario from this table alone and loads no scenario module.

`register` adds a scenario object directly (a test, or a plug-in)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, NamedTuple

from sm121.bench.results import load_results
from sm121.bench.scenario import Results, Scenario, Unknown
from sm121.errors import Sm121Error


class Entry(NamedTuple):
    module: str
    cls: str
    summary: str


_S = "sm121.bench.scenarios"
TABLE: dict[str, Entry] = {
    "overlap": Entry(f"{_S}.overlap.scenario", "Overlap",
                     "Interference and admission: a long prefill amid an ongoing stream."),
    "decode-scaling": Entry(f"{_S}.scaling.scenario", "DecodeScaling",
                            "Decode rates, TTFT and intervals over N concurrent streams."),
    "prefill-scaling": Entry(f"{_S}.scaling.scenario", "PrefillScaling",
                             "Prompt tokens per second with N concurrent prefills."),
    "locality": Entry(f"{_S}.locality.scenario", "Locality",
                      "Cost of a mutating field at clean/bottom/middle/top over turns."),
    "retrieval": Entry(f"{_S}.retrieval.scenario", "Retrieval",
                       "Needles at depths with distractor codes: found and distractors."),
    "knee": Entry(f"{_S}.knee.scenario", "Knee",
                  "The prefill knee and decode saturation on one engine."),
    "agents": Entry(f"{_S}.agents.scenario", "Agents",
                    "N concurrent coding-agent sessions judged against an SLO."),
    "replay": Entry(f"{_S}.agents.scenario", "Replay",
                    "Replay a gateway capture with its original gaps."),
    "trace": Entry(f"{_S}.trace.scenario", "Trace",
                   "Replay a public request trace (Mooncake) with its prefix reuse."),
    "probe": Entry(f"{_S}.probe.scenario", "Probe",
                   "Can this server's streams be counted to the token?"),
    "agent-check": Entry(f"{_S}.agent_check.scenario", "AgentCheck",
                         "Does each agent protocol work end to end (tools, streaming)?"),
    "soak": Entry(f"{_S}.soak.scenario", "Soak",
                  "Agent sessions for hours: leaks, drift and restarts over time."),
}
# Scenarios whose command is written by hand in cli/ (not built from their params).
OWN_COMMAND = frozenset({"probe", "agent-check", "soak"})
_LOADED: dict[str, Scenario[Any, Any]] = {}


def register(name: str, scenario: Scenario[Any, Any], summary: str = "") -> None:
    """Add a scenario object (a plug-in, a test); its name is its command's name."""
    TABLE[name] = Entry("", type(scenario).__name__, summary or scenario.help)
    _LOADED[name] = scenario


def unregister(name: str) -> None:
    TABLE.pop(name, None)
    _LOADED.pop(name, None)


def names() -> list[str]:
    return list(TABLE)


def commands() -> dict[str, str]:
    """name -> one-line summary of the scenarios whose command is built from their params."""
    return {n: e.summary for n, e in TABLE.items() if n not in OWN_COMMAND}


def get(name: str) -> Scenario[Any, Any]:
    """The scenario (its module imported now, once)."""
    if name not in _LOADED:
        if name not in TABLE:
            raise Sm121Error(f"unknown scenario {name!r}", f"one of: {', '.join(TABLE)}")
        entry = TABLE[name]
        try:
            cls = getattr(importlib.import_module(entry.module), entry.cls)
        except (ImportError, AttributeError) as exc:
            raise Sm121Error(f"scenario table: cannot load {entry.module}:{entry.cls}: {exc}",
                             "a table line names a module and a Scenario class in it"
                             ) from exc
        _LOADED[name] = cls()
    return _LOADED[name]


def find(name: str) -> Scenario[Any, Any] | None:
    return get(name) if name in TABLE else None


def parse_results(data: dict[str, Any]) -> Results:
    """A results file (as JSON) in its scenario's models; raises pydantic's ValidationError
    naming the field when it does not fit. An unknown scenario reads with open records."""
    return (find(str(data.get("scenario"))) or Unknown()).read(data)


def load_typed(path: Path) -> Results:
    return parse_results(load_results(path))
