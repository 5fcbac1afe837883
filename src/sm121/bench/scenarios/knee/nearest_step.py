"""The knee's rate for a fresh prompt of a given length: the engine-window prefill rate (the
median over its repetitions) at the step nearest that length, a step being one exact prompt of
that many tokens alone, nothing cached. The cold start's model (memory/cold_start.py) needs
the prefill rate of fresh prompts of about the sessions' first prompt's length; tune's
predictions (bench/tune/cold_rate.py) and its validation against every committed run
(benchmarks/cold_start.py) read it from a knee here, by one rule.

Nearest by tokens, and near only within a factor of NEAR of the prompt: a fresh prompt's rate
moves with its length (attention over the prompt grows with it; the H200 sitting's knee,
docs/results/gpu-h200/tune-capacity/tune-results.tar.gz's knee.json, measured 39,543 tok/s at
8,192 tokens and 34,602 at 16,384: 12.5% less over one doubling). The knee's steps double (128 to
16,384 by default), so a prompt inside the steps measured always has one within a factor of
1.5; a factor of 2 reaches one doubling past either end and no further. A knee whose steps stop
well short of the prompt (one capped by `--chunk 512` against a 5,000-token first prompt)
measured another prompt's rate: none is taken, and why is said. Only the engine's window is
read (the rate of the prefill itself, as benchmarks/cold_start.py validated it); an engine
without prefill histograms (llama-server) gives none."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sm121.bench.scenarios.knee.models import KneeSummary

NEAR = 2.0  # a step is near a prompt within this factor of its length, either way


@dataclass(frozen=True)
class NearestStep:
    step: int  # the prompt's tokens the knee measured
    tok_s: float  # the engine window's median rate there


def nearest_step(summary: KneeSummary, prompt_tokens: float) -> NearestStep | str:
    """The knee's engine-window rate at the step nearest `prompt_tokens`, or why none is near
    it (a sentence)."""
    rows = [r for r in (summary.engine.prefill if summary.engine else [])
            if r.median is not None and math.isfinite(r.median) and r.median > 0]
    if not rows:
        return "the knee measured no prefill rate in the engine's window"
    row = min(rows, key=lambda r: abs(r.step - prompt_tokens))
    if not row.step / NEAR <= prompt_tokens <= row.step * NEAR:
        steps = ", ".join(f"{r.step:,}" for r in rows)
        return (f"the knee measured no prompt near {prompt_tokens:,.0f} tokens (its steps: "
                f"{steps}; near: within a factor of {NEAR:g})")
    return NearestStep(row.step, float(row.median or 0))
