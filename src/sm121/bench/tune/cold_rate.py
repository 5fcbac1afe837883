"""The cold start's rate for tune's predictions (docs/capacity.md, "The cold start" and
"tune"). The cold start (memory/cold_start.py: every session's first prompt at once, second
turns queued behind them) needs the engine's prefill rate for fresh prompts of about the first
prompt's length. Tune boots one engine on the same stack before its arms, the knee's: it
measures one fresh prompt alone per step there, and counts the workload's first prompt on it
(tune/first_prompt.py). The rate is the knee's at the step nearest that count
(scenarios/knee/nearest_step.py: the rule benchmarks/cold_start.py validates the model with
against every committed run), said with its source; every arm's prediction, before its boot
and from its own, takes it, so its first probes move where the cold start binds.

Where the knee's engine counted no first prompt (or the knee's file holds no count), or the
knee measured no prompt near it, the cold start stays "not known" and tune says why. Made from
the knee at every invocation (a resumed tune whose knee gained nothing gets the same) and kept
in tune.json (`cold_rate`)."""

from __future__ import annotations

from sm121.bench.scenarios.knee.nearest_step import nearest_step
from sm121.bench.tune.files import KneeFile
from sm121.bench.tune.first_prompt import uncounted
from sm121.bench.tune.result import ColdRateRecord


def cold_rate(knee: KneeFile | None) -> ColdRateRecord:
    """The rate of a fresh first prompt from the knee, or why there is none."""
    if knee is None:
        return ColdRateRecord(why="no knee measured")
    counted = knee.first_prompt.counted() if knee.first_prompt is not None else None
    if counted is None:
        return ColdRateRecord(why=f"no first prompt counted: {uncounted(knee.first_prompt)}")
    tokens = counted.first_prompt_tokens
    found = nearest_step(knee.summary, tokens)
    if isinstance(found, str):
        return ColdRateRecord(first_prompt_tokens=tokens, why=found)
    return ColdRateRecord(tok_s=found.tok_s, step=found.step, first_prompt_tokens=tokens,
                          source=(f"measured on this stack by tune's knee, {found.step:,}-token "
                                  "prompt"))


def said(found: ColdRateRecord) -> str:
    """tune's line on the rate its predictions take for the cold start."""
    return f"cold start: the prefill rate of a fresh first prompt: {found.text()}"
