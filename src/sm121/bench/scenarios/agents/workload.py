"""The agent workload spec (YAML) and its presets, fitted to a server's max-model-len.

A workload says what N coding-agent sessions send: a system prompt and tool definitions of a
given size, tokens appended each turn (the last tool result), output tokens per turn, think
time between turns, the share of turns that paste a large blob, and optionally one background
batch job beside the agents. Sizes are tokens, made exact by the server's /tokenize.

The presets carry the field's sizes (DOMAIN.md: 10-20K system prompt plus tools, each step
re-prefills 270-660 tokens). `fit` shrinks every token size by one factor when the whole
conversation would not fit in the server's context, so the same preset runs on a 64K CPU
engine and a 1M GPU one; it never grows them.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sm121.errors import Sm121Error
from sm121.recipes.loader import load_yaml

# Chat-template tokens per message (role markers) and per turn, kept free when fitting.
TEMPLATE_MARGIN = 64


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Range(_Strict):
    """A uniform range; YAML may give one number (fixed) or [min, max]."""

    min: float = Field(ge=0)
    max: float = Field(ge=0)

    @model_validator(mode="before")
    @classmethod
    def _from_scalar(cls, value: Any) -> Any:
        if isinstance(value, int | float):
            return {"min": value, "max": value}
        if isinstance(value, list | tuple) and len(value) == 2:
            return {"min": value[0], "max": value[1]}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self

    def draw(self, rng: random.Random) -> float:
        return rng.uniform(self.min, self.max)

    def draw_int(self, rng: random.Random) -> int:
        return rng.randint(int(self.min), int(self.max))

    def scaled(self, factor: float) -> Range:
        return Range(min=max(1, math.floor(self.min * factor)),
                     max=max(1, math.floor(self.max * factor)))


class Tools(_Strict):
    count: int = Field(20, ge=0, description="Tool definitions sent with every turn.")
    tokens_each: int = Field(150, ge=1, description="Tokens of each tool's description.")
    # "api": the request's `tools` (the chat template places them; when the server refuses
    # `tools`, the run falls back to the system prompt and records it). "system_prompt": as
    # text after the system prompt, wherever the template would have put them.
    placement: Literal["api", "system_prompt"] = "api"


class Paste(_Strict):
    share: float = Field(0.0, ge=0, le=1, description="Share of turns that paste a blob.")
    tokens: int = Field(20000, ge=1, description="Tokens of a pasted blob.")


class Background(_Strict):
    """One batch job beside the agents: a long prefill sent once every agent finished its
    first turn (so it lands among steady-state turns, not among the first prefills)."""

    prompt_tokens: int = Field(100_000, ge=1)
    context_share: float = Field(0.75, gt=0, le=1, description="Cap: this share of the "
                                 "server's max-model-len.")
    output_tokens: int = Field(16, ge=1)
    delay_s: float = Field(0.0, ge=0, description="Extra wait after the agents' first turns.")


class Fitted(_Strict):
    """What fit() chose for one server: the context it fitted to, the turns, the one scale
    factor applied to every size, and the resulting token counts."""

    max_model_len: int
    turns: int
    scale: float
    conversation_tokens_max: int
    background_tokens: int | None


class Workload(_Strict):
    name: str = "custom"
    description: str = ""
    system_prompt_tokens: int = Field(12000, ge=1)
    task_tokens: int = Field(200, ge=1, description="The user's opening request.")
    tools: Tools = Tools()
    append_tokens: Range = Range(min=270, max=660)
    output_tokens: Range = Range(min=32, max=160)
    think_time_s: Range = Range(min=0.5, max=2.0)
    paste: Paste = Paste()
    timestamp_first: bool = Field(False, description="The system prompt opens with a "
                                  "timestamp that changes every turn (the anti-pattern).")
    background: Background | None = None
    context_share: float = Field(0.9, gt=0, le=1, description="Share of max-model-len one "
                                 "conversation may fill.")
    slo_from_turn: int = Field(1, ge=0, description="Turns judged by the SLO start here: a "
                               "session's first turn prefills its whole system prompt cold "
                               "(reported apart, as the session's start-up cost).")
    seed: int = 0
    fitted: Fitted | None = Field(None, description="Set by fit().")

    @field_validator("fitted", mode="before")
    @classmethod
    def _unfitted(cls, value: Any) -> Any:
        return value or None  # an unfitted workload's `{}` in files written before Fitted

    def prefix_tokens(self) -> int:
        return self.system_prompt_tokens + self.task_tokens + \
            self.tools.count * self.tools.tokens_each

    def per_turn_tokens(self) -> float:
        """The most one turn can add: an assistant reply, a tool result (or a paste)."""
        append = self.append_tokens.max + self.paste.tokens * self.paste.share
        return self.output_tokens.max + append + TEMPLATE_MARGIN

    def needed(self, turns: int) -> float:
        """The longest conversation `turns` turns can make (every turn at its most): what
        must fit in max-model-len. Not the working set, which is the expected session."""
        return self.prefix_tokens() + TEMPLATE_MARGIN + turns * self.per_turn_tokens()

    def mean_reply_tokens(self) -> float:
        return (self.output_tokens.min + self.output_tokens.max) / 2

    def mean_turn_tokens(self, template_tokens: float = TEMPLATE_MARGIN) -> float:
        """What one turn adds on average: the previous reply, a tool result (or a paste, at
        its share), the template's tokens for the two messages (as an engine rendered them,
        else the margin)."""
        append = (self.append_tokens.min + self.append_tokens.max) / 2 + \
            self.paste.tokens * self.paste.share
        return append + self.mean_reply_tokens() + template_tokens

    def expected_context(self, turns: int, first_prompt_tokens: float | None = None,
                         template_tokens: float = TEMPLATE_MARGIN) -> float:
        """A session's context after its last turn, on average: its first prompt (as the
        engine rendered it, else the nominal prefix and margin), `turns - 1` mean turns, and
        the last turn's mean reply. The capacity model's working set."""
        first = self.prefix_tokens() + TEMPLATE_MARGIN if first_prompt_tokens is None \
            else first_prompt_tokens
        return first + max(0, turns - 1) * self.mean_turn_tokens(template_tokens) + \
            self.mean_reply_tokens()

    def background_tokens(self, max_model_len: int) -> int | None:
        if self.background is None:
            return None
        cap = int(self.background.context_share * max_model_len) - \
            self.background.output_tokens - TEMPLATE_MARGIN
        return max(1, min(self.background.prompt_tokens, cap))


def fit(workload: Workload, max_model_len: int, turns: int) -> Workload:
    """The workload with every token size shrunk by one factor when `turns` turns would not
    fit in context_share x max_model_len; unchanged (but annotated) when they do."""
    budget = workload.context_share * max_model_len
    fixed = TEMPLATE_MARGIN * (turns + 1)  # template tokens do not shrink with the sizes
    factor = min(1.0, (budget - fixed) / max(1.0, workload.needed(turns) - fixed))
    scaled = workload if factor >= 1.0 else workload.model_copy(update={
        "system_prompt_tokens": max(1, math.floor(workload.system_prompt_tokens * factor)),
        "task_tokens": max(1, math.floor(workload.task_tokens * factor)),
        "tools": workload.tools.model_copy(update={
            "tokens_each": max(1, math.floor(workload.tools.tokens_each * factor))}),
        "append_tokens": workload.append_tokens.scaled(factor),
        "output_tokens": workload.output_tokens.scaled(factor),
        "paste": Paste(share=workload.paste.share,
                       tokens=max(1, math.floor(workload.paste.tokens * factor))),
    })
    if factor <= 0 or scaled.needed(turns) > budget:
        raise Sm121Error(f"workload {workload.name!r} cannot fit {turns} turns in a context of "
                         f"{max_model_len:,} tokens", "use fewer --turns or a server with a "
                         "larger max-model-len")
    fitted = Fitted(max_model_len=max_model_len, turns=turns, scale=round(factor, 4),
                    conversation_tokens_max=math.ceil(scaled.needed(turns)),
                    background_tokens=scaled.background_tokens(max_model_len))
    return scaled.model_copy(update={"fitted": fitted})


def fit_to_server(workload: Workload, max_model_len: int, turns: int | None) -> Workload:
    """fit() for a run of `turns` turns, or of as many as one conversation holds unscaled (a
    --duration run): what the agents run sends, and so what tune's exclusive prefill sends."""
    return fit(workload, max_model_len, turns or turns_that_fit(workload, max_model_len))


def turns_that_fit(workload: Workload, max_model_len: int) -> int:
    """How many turns one conversation holds unscaled (for --duration runs)."""
    room = workload.context_share * max_model_len - workload.prefix_tokens() - TEMPLATE_MARGIN
    return max(1, math.floor(room / workload.per_turn_tokens()))


_CODING = {"description": "an append-only coding agent: 12K system prompt, 20 tools of 150 "
           "tokens, each turn appends a 270-660-token tool result and answers 32-160 tokens",
           "system_prompt_tokens": 12000, "tools": {"count": 20, "tokens_each": 150}}

_PRESET_SPECS = {
    "coding-agent": {"name": "coding-agent", **_CODING},
    "coding-agent-with-batch": {
        "name": "coding-agent-with-batch", **_CODING,
        "description": "coding-agent plus one background job: a 100K-token prefill (at most "
                       "75% of max-model-len) once every agent finished its first turn",
        "background": {"prompt_tokens": 100_000, "context_share": 0.75}},
    # The tools travel in the system prompt, after the timestamp: some chat templates (the
    # tiny test model's among them) render `tools` before the messages, and then the
    # timestamp would not open the prompt at all.
    "timestamp-first": {
        "name": "timestamp-first", **_CODING,
        "tools": {"count": 20, "tokens_each": 150, "placement": "system_prompt"},
        "description": "coding-agent whose system prompt opens with a timestamp that changes "
                       "every turn (tools in the system prompt, after it): the first cache "
                       "block differs, so nothing is reused",
        "timestamp_first": True},
    # Claude Code sized (issue 44): its system prompt and tool schemas come near 20-25K
    # tokens, and a turn appends a file read or a command's output. The sessions end near
    # 50K tokens at 6 turns (59K at most), so the pool binds at a few agents: an H100's 392K holds 7.
    "long-session": {
        "name": "long-session",
        "description": "a Claude-Code-sized agent: 14K system prompt, 18 tools of 500 tokens, "
                       "each turn appends a 3.5-5.5K-token tool result and answers 64-400 "
                       "tokens, 2-8 s between turns: about 50K tokens after 6 turns",
        "system_prompt_tokens": 14000, "tools": {"count": 18, "tokens_each": 500},
        "append_tokens": [3500, 5500], "output_tokens": [64, 400], "think_time_s": [2.0, 8.0]},
}
PRESETS: dict[str, Workload] = {name: Workload.model_validate(spec)
                                for name, spec in _PRESET_SPECS.items()}


def load_workload(name_or_file: str) -> Workload:
    """A preset by name, or a YAML file (a file may start from a preset with `preset:`)."""
    if name_or_file in PRESETS:
        return PRESETS[name_or_file].model_copy(deep=True)
    path = Path(name_or_file)
    if not path.is_file():
        raise Sm121Error(f"unknown workload {name_or_file!r}",
                         f"a preset ({', '.join(PRESETS)}) or a YAML file")
    try:
        data = load_yaml(path.read_text()) or {}  # no aliases, no duplicate keys
    except (OSError, yaml.YAMLError) as exc:
        raise Sm121Error(f"cannot read workload {path}: {exc}", "fix the YAML") from exc
    if not isinstance(data, dict):
        raise Sm121Error(f"workload {path} is not a mapping", "see `sm121 bench agents --help`")
    base = data.pop("preset", None)
    if base is not None and base not in PRESETS:
        raise Sm121Error(f"{path}: unknown preset {base!r}", f"one of: {', '.join(PRESETS)}")
    preset = PRESETS[base].model_dump(exclude_unset=True) if base is not None else {}
    merged = {**preset, "name": path.stem, **data}
    try:
        return Workload.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise Sm121Error(f"workload {path} is invalid: {problems}",
                         "see the fields in `sm121 bench agents --help`") from exc
