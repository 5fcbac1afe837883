"""tune's state on disk (OUT/tune.json), written after every step, so that an interrupted
tune (Ctrl-C, SIGTERM, a device call's time limit) resumes where it stopped: the knee, the
candidates, the plan, which boots and sweep points are measured, the time already spent."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sm121.bench.tune.result import ExclusivePrefill, Probe, RequestRecord
from sm121.errors import Sm121Error
from sm121.runs.state import write_json_atomic

NAME = "tune.json"
# What must match for a resume: the same question asked of the same recipe.
KEYS = ("recipe", "workload", "slo", "agents", "turns", "max_agents")


class TuneState:
    def __init__(self, out: Path, question: RequestRecord, fresh: bool = False) -> None:
        self.path = out / NAME
        request = question.model_dump(mode="json")
        self._since = time.monotonic()
        # tune.json as read and written (the JSON edge): steps add their keys as they finish
        self.data: dict[str, Any]
        if self.path.is_file() and not fresh:
            try:
                self.data = json.loads(self.path.read_text())
            except ValueError as exc:
                raise Sm121Error(f"{self.path} is not readable JSON: {exc}",
                                 "pass --fresh to start this tune over") from exc
            asked = {k: request.get(k) for k in KEYS}
            was = {k: self.data["request"].get(k) for k in KEYS}
            if asked != was:
                raise Sm121Error(f"{self.path} is a tune of {was}, not of {asked}",
                                 "pass the same arguments to resume, another --out, or "
                                 "--fresh to start over here")
            self.data["resumed"] = self.data.get("resumed", 0) + 1
            self.data["request"] = {**self.data["request"], **request}
        else:
            self.data = {"request": request, "created": datetime.now(UTC).isoformat(
                timespec="seconds"), "elapsed_s": 0.0, "resumed": 0, "status": "running"}
        out.mkdir(parents=True, exist_ok=True)
        self.save()

    @property
    def elapsed_s(self) -> float:
        """Time spent by this tune, over every invocation, up to now."""
        return float(self.data["elapsed_s"]) + time.monotonic() - self._since

    def save(self) -> None:
        now = time.monotonic()
        self.data["elapsed_s"] = float(self.data["elapsed_s"]) + now - self._since
        self._since = now
        write_json_atomic(self.path, self.data)

    def set(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def sweep(self, name: str) -> list[Probe]:
        """The arm's capacity probes so far."""
        return [Probe.model_validate(p) for p in self.data.setdefault("sweeps", {}).get(name, [])]

    def add_sweep_point(self, name: str, point: Probe) -> None:
        point_json = point.model_dump(mode="json")
        self.data.setdefault("sweeps", {}).setdefault(name, []).append(point_json)
        self.save()

    def confirmations(self, name: str) -> list[Probe]:
        """The arm's confirmation runs at the second N (tune/confirm.py)."""
        return [Probe.model_validate(p) for p in (self.data.get("confirm") or {}).get(name, [])]

    def add_confirmation(self, name: str, point: Probe) -> None:
        point_json = point.model_dump(mode="json")
        self.data.setdefault("confirm", {}).setdefault(name, []).append(point_json)
        self.save()

    def exclusive(self, name: str) -> list[ExclusivePrefill]:
        """The arm's exclusive long prefills, one per boot (tune/exclusive.py)."""
        return [ExclusivePrefill.model_validate(e)
                for e in (self.data.get("exclusive") or {}).get(name, [])]

    def add_exclusive(self, name: str, found: ExclusivePrefill) -> None:
        self.data.setdefault("exclusive", {}).setdefault(name, []).append(
            found.model_dump(mode="json"))
        self.save()
