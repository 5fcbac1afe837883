"""A start-up waterfall: every second from the launch to the first generation in a named phase.

Two clocks meet here:
- the launcher's: the wall-clock moment the launch began (`Timings.started_at`, or the run's
  `created` stamp, whole seconds, for runs recorded before it existed) and monotonic offsets
  from it (process started, API up, first generation);
- the engine log's: the engine host's local wall clock in whole seconds, no year, no zone
  (the engine adapter's; vLLM's in engines/vllm/milestones.py).
The join finds the log's UTC offset as the whole quarter-hour nearest to (API-server start line
minus the launcher's API-up moment), places each stamp in the middle of its second, and keeps
the order of the launcher's moments (a log moment never lands before the process started or
after the API answered). Time between two milestones the table below does not know is shown as
"unattributed", never folded into a neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel

from sm121.boot_facts import BootPhases, Milestone
from sm121.engines.adapter import EngineAdapter
from sm121.runs.state import Timings

UNATTRIBUTED = "unattributed"
PHASES = ("launcher", "imports and config", "engine core start", "weight loading",
          "torch.compile", "warm-up and profiling", "KV allocation", "CUDA-graph capture",
          "API server start", "API up", "first generation", UNATTRIBUTED)
_QUARTER_HOUR_S = 900

# (milestone before, milestone after) -> (phase, what happens in between).
_STEPS: dict[tuple[str, str], tuple[str, str]] = {
    ("launch", "process_started"): ("launcher", "before_serve hooks, process spawn"),
    ("process_started", "api_first"): ("imports and config", "Python, torch and vLLM imports"),
    ("api_first", "config_done"): ("imports and config", "args, model config, architecture"),
    ("config_done", "engine_core_first"): ("engine core start", "engine core process: spawn, imports"),
    ("api_first", "engine_core_first"): ("engine core start", "config, engine core spawn"),
    ("engine_core_first", "load_start"): ("engine core start", "workers, distributed init, backends"),
    ("load_start", "load_end"): ("weight loading", "safetensors shards"),
    ("load_end", "compile_end"): ("torch.compile", "dynamo trace, inductor (or its cache)"),
    ("load_end", "compile_step"): ("torch.compile", "dynamo trace, inductor (or its cache)"),
    ("load_end", "warmup_start"): ("warm-up and profiling", "model runner setup"),
    ("warmup_start", "compile_end"): ("torch.compile", "compile inside the warm-up"),
    ("warmup_start", "compile_step"): ("torch.compile", "compile inside the warm-up"),
    # The CPU build without vLLM's compile backend (DYNAMO_TRACE_ONCE, stock inductor) prints
    # no compile line of its own between these two: the bracket is the compile and the one
    # dummy forward that triggers it.
    ("warmup_start", "warmup_done"): ("torch.compile", "the CPU build's compile warm-up: dynamo "
                                      "trace, inductor (or its cache), one dummy forward"),
    ("compile_step", "warmup_done"): ("warm-up and profiling", "the warm-up's dummy forward"),
    ("compile_end", "first_forward_end"): ("warm-up and profiling", "first forward"),
    ("compile_step", "first_forward_end"): ("warm-up and profiling", "first forward"),
    ("first_forward_end", "cudagraph_profile_start"): (
        "warm-up and profiling", "memory profiling run (dummy batch, sampler; kernel JIT when "
        "its cache is cold)"),
    ("first_forward_end", "kv_budget"): ("warm-up and profiling", "memory profiling run"),
    ("first_forward_end", "warmup_done"): ("warm-up and profiling", "warm-up"),
    ("cudagraph_profile_start", "kv_budget"): ("warm-up and profiling", "CUDA-graph memory profiling"),
    ("warmup_done", "kv_budget"): ("KV allocation", "KV sizing"),
    ("kv_budget", "kv_pool"): ("KV allocation", "KV pool sizing"),
    ("kv_pool", "capture_start"): ("KV allocation", "KV allocation, kernel warm-up"),
    ("capture_start", "capture_end"): ("CUDA-graph capture", "by the engine's own count"),
    ("kv_pool", "capture_end"): ("CUDA-graph capture", "KV allocation and capture"),
    ("kv_pool", "engine_ready"): ("KV allocation", "KV allocation, engine finish"),
    ("capture_end", "engine_ready"): ("CUDA-graph capture", "engine finish"),
    ("engine_ready", "api_start"): ("API server start", "tasks, chat template, routes"),
    ("api_start", "api_up"): ("API up", "until the launcher's /v1/models answered"),
    ("engine_ready", "api_up"): ("API up", "API server start, /v1/models answered"),
    ("api_up", "first_generation"): ("first generation", "the readiness completion"),
}


@dataclass(frozen=True)
class LauncherClock:
    """The launcher's view of one start; seconds since the launch began."""

    started_at: datetime | None = None  # UTC wall clock of the launch's beginning
    precise: bool = True  # False: started_at is a whole-second stamp (older runs)
    process_started_s: float | None = None
    api_up_s: float | None = None
    first_generation_s: float | None = None


def launcher_clock(created: str, timings: Timings) -> LauncherClock:
    """The launcher's clock of a run: `started_at` when recorded, else the run's `created`
    stamp (whole seconds, taken just before the launch began)."""
    precise = timings.started_at is not None
    started = datetime.fromisoformat(timings.started_at or created)
    if started.tzinfo is not None:
        started = started.astimezone(UTC)
    return LauncherClock(started_at=started, precise=precise,
                         process_started_s=timings.process_started_s, api_up_s=timings.port_open_s,
                         first_generation_s=timings.first_generation_s)


class Segment(BaseModel):
    phase: str
    step: str
    start_s: float
    end_s: float

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


class Waterfall(BaseModel):
    segments: list[Segment] = []
    total_s: float = 0.0
    joined: str = "log only"  # or "launcher + log"
    log_utc_offset_s: int | None = None
    notes: list[str] = []

    @property
    def unattributed_s(self) -> float:
        return sum(s.seconds for s in self.segments if s.phase == UNATTRIBUTED)

    @property
    def named_share(self) -> float:
        return 1 - self.unattributed_s / self.total_s if self.total_s > 0 else 0.0

    def phase_seconds(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for segment in self.segments:
            totals[segment.phase] = totals.get(segment.phase, 0.0) + segment.seconds
        return {p: round(totals[p], 2) for p in PHASES if p in totals}


def build_waterfall(log_text: str, clock: LauncherClock, facts: BootPhases | None = None, *,
                    engine: EngineAdapter) -> Waterfall:
    """`engine`: the adapter of the plan that wrote the log, which reads its stamps."""
    year = (clock.started_at or datetime.now(UTC)).year
    found = engine.milestones(engine.stamped_lines(log_text, year))
    found = _with_capture_start(found, facts)
    if not found:
        return Waterfall(notes=[f"the log has no wall-clock stamps {engine.label}'s reader places"])
    points, waterfall = _placed(found, clock)
    # Zero-length steps stay: "0 s warm against 86 s cold" is the comparison that matters.
    segments = [_segment(a, b) for a, b in zip(points, points[1:], strict=False)]
    waterfall.segments = segments
    waterfall.total_s = round(points[-1][1] - points[0][1], 2)
    waterfall.notes += _notes(facts)
    return waterfall


def _placed(found: list[Milestone], clock: LauncherClock
            ) -> tuple[list[tuple[str, float]], Waterfall]:
    """Milestones on one time line: the launcher's seconds when its clock is known (with the
    launcher's own moments), else seconds from the log's first line."""
    anchor_launcher = clock.api_up_s
    anchor = next((m for m in found if m.key == "api_start"), None)
    if clock.started_at is None or anchor is None or anchor_launcher is None:
        zero = found[0].stamp
        alone = [(m.key, (m.stamp - zero).total_seconds()) for m in found]
        return alone, Waterfall(notes=["log only: seconds from the log's first line to its last "
                                       "milestone (no launcher clock)"])
    started = clock.started_at.replace(tzinfo=None)
    delta = (anchor.stamp - started).total_seconds() + 0.5 - anchor_launcher
    offset = round(delta / _QUARTER_HOUR_S) * _QUARTER_HOUR_S
    low = clock.process_started_s or 0.0
    high = anchor_launcher
    points: list[tuple[str, float]] = [("launch", 0.0), ("process_started", low)]
    for m in found:
        at = (m.stamp - timedelta(seconds=offset) - started).total_seconds() + 0.5
        points.append((m.key, min(max(at, points[-1][1], low), high)))
    points.append(("api_up", high))
    if clock.first_generation_s is not None:
        points.append(("first_generation", clock.first_generation_s))
    notes = [f"log stamps are whole seconds (placed mid-second); log clock UTC{offset / 3600:+g} h"]
    if not clock.precise:
        notes.append("launch moment known to the second only (a run recorded before "
                     "started_at): the first phase may be off by up to 1 s")
    return points, Waterfall(joined="launcher + log", log_utc_offset_s=offset, notes=notes)


def _segment(a: tuple[str, float], b: tuple[str, float]) -> Segment:
    phase, step = _STEPS.get((a[0], b[0]), (UNATTRIBUTED, f"between {a[0]} and {b[0]}"))
    return Segment(phase=phase, step=step, start_s=round(a[1], 2), end_s=round(b[1], 2))


def _with_capture_start(found: list[Milestone], facts: BootPhases | None) -> list[Milestone]:
    """Graph capture begins its printed duration before it ends (no line marks the start)."""
    end = next((m for m in found if m.key == "capture_end"), None)
    if end is None or facts is None or facts.graph_capture_s is None:
        return found
    start = end.stamp - timedelta(seconds=facts.graph_capture_s)
    before = [m for m in found if m.line < end.line]
    if before and start < before[-1].stamp:
        return found  # the printed duration reaches past the previous milestone: no split
    marker = Milestone("capture_start", start, end.line, end.text)
    return sorted([*found, marker], key=lambda m: (m.stamp, m.line, m.key != "capture_start"))


def _notes(facts: BootPhases | None) -> list[str]:
    """The durations the engine printed (finer than its whole-second stamps)."""
    if facts is None:
        return []
    notes = []
    if facts.weights_s is not None:
        shards = (f", {facts.shards} shards, {facts.s_per_shard:.2f} s/shard"
                  if facts.shards and facts.s_per_shard is not None else "")
        notes.append(f"weights {facts.weights_s:.2f} s{shards}")
    if facts.compile_s is not None or facts.compile_cache:
        total = f"{facts.compile_s:.2f} s" if facts.compile_s is not None else "-"
        notes.append(f"torch.compile {total}, cache {facts.compile_cache or 'unknown'}")
    if facts.graph_capture_s is not None:
        notes.append(f"graph capture {facts.graph_capture_s:g} s")
    if facts.init_engine_s is not None:
        notes.append(f"engine init {facts.init_engine_s:.2f} s")
    return ["engine's own figures: " + "; ".join(notes)] if notes else []
