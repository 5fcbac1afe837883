"""The knee's terminal summary (`Knee.console`, for `sm121 bench knee`)."""

from __future__ import annotations

from sm121.bench.scenarios.knee.models import KneeSummary


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def console(summary: KneeSummary) -> list[str]:
    """Per window: the knee, the decode saturation, and both curves with their spread."""
    lines = []
    for window, part in (("engine", summary.engine), ("client", summary.client)):
        if part is None:
            return []
        k, sat = part.knee, part.decode_saturation
        decode = "saturates at batch" if sat.saturated else "not saturated up to batch"
        lines.append(f"{window} window: prefill knee {k.knee_at} tokens/step "
                     f"({_n(k.knee_rate)} tok/s; peak {_n(k.peak)} at {k.peak_at}); "
                     f"decode {decode} {sat.knee_at} ({_n(sat.peak)} tok/s peak)")
        lines.append("  prefill tok/s by step (median [min-max]): " + ", ".join(
            f"{r.step}: {_n(r.median)} [{_n(r.min)}-{_n(r.max)}]" for r in part.prefill))
        lines.append("  decode tok/s by batch: " + ", ".join(
            f"{r.batch}: {_n(r.median)} [{_n(r.min)}-{_n(r.max)}]" for r in part.decode))
    if summary.dropped_steps:
        lines.append(f"steps not measured (above the step budget or the context): "
                     f"{summary.dropped_steps}")
    return lines
