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
    if "prefill_cached" in summary.model_fields_set:  # a file from before the check: none
        lines.append(salt_line(summary.prefill_cached))
    if summary.dropped_steps:
        lines.append(f"steps not measured (above the step budget or the context): "
                     f"{summary.dropped_steps}")
    return lines


def salt_line(cached: int | None) -> str:
    """What the salted prefill prompts found cached: the check that each step computed its
    whole prompt (None: the engine sends no count, so it is not checked)."""
    if cached is None:
        return ("salted prefill prompts: not checked (the engine reports no cached count); "
                "the rates take every step as computed whole")
    if cached == 0:
        return "salted prefill prompts: the engine counted nothing cached (checked)"
    return (f"salted prefill prompts: the engine counted {cached:,} tokens cached (the salt "
            "did not hold); the rates count only the tokens computed")
