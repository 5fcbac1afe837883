"""What tune's next boot or probe should cost, and what its budget has left: the estimates
tune/budget.py plans with, taken from the boots and runs of the A/B measured so far, and the
budget less the time every invocation has spent. Read before every boot, probe and
confirmation boot, so each of them is decided from what this tune has measured, not from
the first guess."""

from __future__ import annotations

from sm121.bench.scenarios.agents.models import stored_summary
from sm121.bench.tune.budget import Estimates, measured
from sm121.bench.tune.files import AbFile
from sm121.bench.tune.request import TuneRequest
from sm121.bench.tune.state import TuneState


def estimates(request: TuneRequest, ab: AbFile, knee_boot_s: float | None = None) -> Estimates:
    """From the A/B's boots and runs so far; before the first boot, --boot-estimate, else
    the knee's boot (the machine's first boot may be cold and slower)."""
    boots = [t for b in ab.boots if (t := b.timings.first_generation_s) is not None]
    walls = [w for s in ab.samples
             if not s.error and (w := stored_summary(s).wall_s) is not None]
    # The exclusive prefill costs about what the background job's prefill took in the runs
    prefills = [t for s in ab.samples if s.measured() and (t := s.metrics.background_ttft_s)]
    return measured(boots, walls, request.boot_estimate_s or knee_boot_s or 60.0,
                    request.rep_estimate_s, request.rest_s, prefills)


def left_s(request: TuneRequest, state: TuneState) -> float:
    """The budget's seconds not yet spent, over every invocation of this tune."""
    return request.budget_s - state.elapsed_s
