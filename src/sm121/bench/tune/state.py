"""tune's state on disk (OUT/tune.json), written after every step, so that an interrupted
tune (Ctrl-C, SIGTERM, a device call's time limit) resumes where it stopped: the knee, the
candidates, the plan, which boots and sweep points are measured, the time already spent.
It is one typed record (`result.TuneRecord`) from the moment it is read to each write. Read
back it may be a stranger's (a tune folder handed over and resumed): a field that does not fit
its type (an arm name outside names.ProfileName, an engine arg name outside the recipes' rule,
schema.check_arg_name) refuses the whole file, before any path, boot or line is made from it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from sm121.bench.tune.result import ExclusivePrefill, Probe, RequestRecord, TuneRecord
from sm121.display import escape, quoted
from sm121.errors import Sm121Error
from sm121.runs.state import write_json_atomic

NAME = "tune.json"
# What must match for a resume: the same question asked of the same recipe.
KEYS = ("recipe", "workload", "slo", "agents", "turns", "max_agents")


class TuneState:
    def __init__(self, out: Path, question: RequestRecord, fresh: bool = False) -> None:
        self.path = out / NAME
        self._since = time.monotonic()
        if self.path.is_file() and not fresh:
            self.record = self._resumed(question)
        else:
            self.record = TuneRecord(request=question, created=datetime.now(UTC).isoformat(
                timespec="seconds"), elapsed_s=0.0, resumed=0, status="running")
        out.mkdir(parents=True, exist_ok=True)
        self.save()

    def _resumed(self, question: RequestRecord) -> TuneRecord:
        """tune.json as left, checked: the same question (a new budget is allowed)."""
        try:
            record = TuneRecord.model_validate(json.loads(self.path.read_text()))
        except ValueError as exc:  # JSON that does not parse, or a field that does not fit
            where = ""
            if isinstance(exc, ValidationError):  # a key may be the stranger's name itself
                error = exc.errors()[0]
                field = quoted(".".join(str(p) for p in error["loc"]), 200)
                where = f" (field {field}: {escape(error['msg'])})"
            raise Sm121Error(f"{self.path} is not a tune.json this sm121 reads{where}",
                             "pass --fresh to start this tune over") from exc
        asked = question.model_dump(mode="json")
        was = record.request.to_json()
        if {k: asked.get(k) for k in KEYS} != {k: was.get(k) for k in KEYS}:
            raise Sm121Error(f"{self.path} is a tune of {({k: was.get(k) for k in KEYS})}, "
                             f"not of {({k: asked.get(k) for k in KEYS})}",
                             "pass the same arguments to resume, another --out, or "
                             "--fresh to start over here")
        record.resumed += 1
        record.request = RequestRecord.model_validate({**was, **asked})
        return record

    @property
    def elapsed_s(self) -> float:
        """Time spent by this tune, over every invocation, up to now."""
        return self.record.elapsed_s + time.monotonic() - self._since

    def save(self) -> None:
        now = time.monotonic()
        self.record.elapsed_s += now - self._since
        self._since = now
        write_json_atomic(self.path, self.record.to_json())

    def sweep(self, name: str) -> list[Probe]:
        """The arm's capacity probes so far."""
        return list(self.record.sweeps.get(name, []))

    def add_sweep_point(self, name: str, point: Probe) -> None:
        self.record.sweeps.setdefault(name, []).append(point)
        self.changed("sweeps")

    def confirmations(self, name: str) -> list[Probe]:
        """The arm's confirmation runs at the second N (tune/confirm.py)."""
        return list(self.record.confirm.get(name, []))

    def add_confirmation(self, name: str, point: Probe) -> None:
        self.record.confirm.setdefault(name, []).append(point)
        self.changed("confirm")

    def exclusive(self, name: str) -> list[ExclusivePrefill]:
        """The arm's exclusive long prefills, one per boot (tune/exclusive.py)."""
        return list(self.record.exclusive.get(name, []))

    def add_exclusive(self, name: str, found: ExclusivePrefill) -> None:
        self.record.exclusive.setdefault(name, []).append(found)
        self.changed("exclusive")

    def changed(self, *fields: str) -> None:
        """Fields changed in place (a list or dict grown): written from now on, then saved."""
        self.record.model_fields_set.update(fields)
        self.save()

    def forget(self, *fields: str) -> None:
        """Fields back to unset (their defaults, and no longer written), then saved."""
        for name in fields:
            setattr(self.record, name, TuneRecord.model_fields[name].get_default(
                call_default_factory=True))
            self.record.model_fields_set.discard(name)
        self.save()
