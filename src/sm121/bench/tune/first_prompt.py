"""The workload's first prompt, counted on the knee's engine (issue 44). An arm's capacity is
predicted before its boot, where no engine of its own can count what its sessions send; with
nothing counted the working set is the longest session (capacity.NOMINAL_PREFIX: a bound that
errs low), with a count it is the expected session (docs/results/gpu-h100/capacity compares
them against the measured cliff). Tune boots one engine before its arms, the knee's: while it
is up, the sessions' first prompt and a turn's template tokens are counted there as
benchmarks/capacity_cliff.py counts them (first_prompt.rendered_at) and kept in knee.json.

The count holds for an arm whose context fits the workload at the sizes counted (the same
system prompt, task and tools). Where the engine did not count (no /tokenize, a template that
refuses the tools), or the knee's file holds no count (measured before tune counted it, or
given by --knee), the bound stays, and tune's output says which and why."""

from __future__ import annotations

from sm121.bench.scenarios.agents.capacity import NOMINAL_PREFIX, load_shape, nominal_prefix
from sm121.bench.scenarios.agents.first_prompt import (
    NOT_COUNTED,
    RenderedSession,
    rendered_or_why,
)
from sm121.engines.client import max_model_len
from sm121.engines.client_sync import SyncEngineClient
from sm121.memory.capacity_types import SessionShape
from sm121.open_model import Open

WHERE = "the knee's engine's /tokenize"


class CountedPrompt(Open):
    """knee.json's `first_prompt`: the workload's first prompt and a turn's template tokens as
    the knee's engine counted them, fitted to the context it served (the sizes counted:
    `prefix_tokens`, the fitted system prompt, task and tools); `error`: why it counted none."""

    workload: str
    turns: int
    max_model_len: int | None = None
    prefix_tokens: int | None = None
    first_prompt_tokens: int | None = None
    turn_template_tokens: int | None = None
    error: str | None = None

    def counted(self) -> RenderedSession | None:
        if self.first_prompt_tokens is None or self.turn_template_tokens is None:
            return None
        return RenderedSession(self.first_prompt_tokens, self.turn_template_tokens)


def count_on(url: str, workload: str, turns: int) -> CountedPrompt:
    """The first prompt of `workload` (a run of `turns` turns) counted by the engine at `url`,
    fitted to the context it serves; an engine that cannot count it gets `error`, not an
    exception (the knee goes on)."""
    found = CountedPrompt(workload=workload, turns=turns)
    try:
        served = max_model_len(SyncEngineClient(url, timeout_s=30).get_json("/v1/models"))
        if not served:
            return found.model_copy(update={"error": "its /v1/models states no max_model_len"})
        found = found.model_copy(update={"max_model_len": served,
                                         "prefix_tokens": nominal_prefix(workload, turns, served)})
    except NOT_COUNTED as exc:
        why = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return found.model_copy(update={"error": why.splitlines()[0][:200]})
    rendered = rendered_or_why(url, workload, turns, served)
    if isinstance(rendered, str):
        return found.model_copy(update={"error": rendered})
    return found.model_copy(update={"first_prompt_tokens": rendered.first_prompt_tokens,
                                    "turn_template_tokens": rendered.turn_template_tokens})


def uncounted(counted: CountedPrompt | None) -> str | None:
    """Why the knee's file holds no count (None: it holds one)."""
    if counted is None:
        return ("the knee's file holds no count (a knee measured before tune counted it, or "
                "given by --knee)")
    if counted.counted() is None:
        return f"the knee's engine did not count it: {counted.error or 'no count recorded'}"
    return None


def not_applied(counted: CountedPrompt | None, workload: str, turns: int,
                context: int) -> str | None:
    """Why the knee's count does not hold for an arm of context `context` (None: it does)."""
    if (why := uncounted(counted)) is not None or counted is None:
        return why
    if counted.workload != workload:
        return f"the knee's engine counted another workload ({counted.workload})"
    if nominal_prefix(workload, turns, context) != counted.prefix_tokens:
        return (f"the knee's engine counted it fitted to {counted.max_model_len or 0:,} tokens "
                f"of context; at {context:,} the workload fits at other sizes")
    return None


def working_session(workload: str, turns: int, context: int,
                    counted: CountedPrompt | None) -> SessionShape:
    """The capacity model's session for an arm of context `context`: the expected one where
    the knee's count holds for it, else the longest one, saying why."""
    why = not_applied(counted, workload, turns, context)
    rendered = counted.counted() if counted is not None else None
    if why is not None or rendered is None:
        return load_shape(workload, turns, context, None, f"{NOMINAL_PREFIX} ({why})")
    return load_shape(workload, turns, context, rendered.first_prompt_tokens,
                      rendered.source(WHERE), rendered.turn_template_tokens)


def said(counted: CountedPrompt | None) -> str:
    """tune's line on the working set its predictions use."""
    rendered = counted.counted() if counted is not None else None
    if rendered is None:
        return f"working set: the longest session, a bound that errs low: {uncounted(counted)}"
    return (f"working set: the expected session, its first prompt counted on {WHERE}: "
            f"{rendered.first_prompt_tokens:,} tokens (system prompt, tools, task), "
            f"{rendered.turn_template_tokens} template tokens a turn")
