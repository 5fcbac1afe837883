"""Why a forced tool call (tool_choice required, or one tool named) came back as text, in the
engine's own terms: its adapter's ForcedToolCalls, found by the model card's owner.

- A named tool_choice the engine does not read: unsupported (it served the request as auto).
- Text that ran to max_tokens where the engine's grammar lets text come before a required
  call: a failure that says so. The model never started its call marker: a model that follows
  its chat template starts it; a random-weight test model does not.
A server sm121 has no adapter for gets the plain failure."""

from __future__ import annotations

from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported
from sm121.bench.scenarios.agent_check.probe import Probe
from sm121.errors import Sm121Error


def no_forced_call(p: Probe, what: str, content: object, *, named: bool, cut: bool
                   ) -> Sm121Error:
    """The error for a forced call that came back with no call: `named`, the request named
    its tool on chat completions; `cut`, the reply stopped at max_tokens."""
    forced, engine = p.facts.forced_calls, p.facts.engine
    shown = f"content: {str(content)[:200]!r}"
    if forced is not None and named and forced.named_ignored:
        return CaseUnsupported(f"{what}: no call came back, and {engine} does not read a named "
                               f"tool_choice: {forced.named_ignored}; {shown}")
    if forced is not None and cut and forced.text_first:
        return CaseFailed(f"{what} returned no tool call: text ran to max_tokens with no call "
                          f"started. {forced.text_first}, so a model that does not start its "
                          f"call answers in text ({engine}); {shown}")
    return CaseFailed(f"{what} returned no tool call; {shown}")
