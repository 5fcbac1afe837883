"""Context-limit cases: a prompt over max-model-len gets a clean 400 (not a 500, not a hang),
and a long prompt near the limit is served, on each protocol (its `TextAsk`). Prompt sizes are
counted by the server's own /tokenize with the chat template, so "near the limit" means near it
in the engine's tokens."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sm121.bench.prompts import filler
from sm121.bench.scenarios.agent_check.cases_tools import CHAT, completion
from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported
from sm121.bench.scenarios.agent_check.probe import Case, Probe, Reply
from sm121.protocols.replies import ChatCompletion

# Tokens left for the reply and the template's own margin in the near-limit case.
HEADROOM = 256
ReplyT = TypeVar("ReplyT")


async def chat_tokens(p: Probe, text: str) -> int:
    body = {"model": p.model, "messages": [{"role": "user", "content": text}],
            "add_generation_prompt": True}
    reply = await p.post("/tokenize", body, record={"messages": f"<{len(text)} chars>"},
                         shown=lambda b: {"count": b.get("count")})
    count = reply.json().get("count")
    if reply.status != 200 or not isinstance(count, int):
        raise CaseUnsupported(f"cannot count prompt tokens: /tokenize HTTP {reply.status}")
    return count


async def prompt_of(p: Probe, tokens: int, seed: int) -> tuple[str, int]:
    """Filler text whose chat prompt is close to `tokens` (at most, after one correction).
    A fresh salt leads it, so the engine really prefills it (no prefix-cache hit)."""
    salt = f"[{secrets.token_hex(4)}] "
    words = max(tokens // 2, 1)
    count = await chat_tokens(p, salt + filler(words, seed))
    words = max(int(words * tokens / max(count, 1)) - 8, 1)
    text = salt + filler(words, seed)
    return text, await chat_tokens(p, text)


@dataclass(frozen=True)
class TextAsk(Generic[ReplyT]):
    """How one protocol asks with a plain text prompt and reads what it served: the limit
    cases are the same on every protocol but for these."""

    route: str
    prompt_field: str  # the request field the prompt is in (shown in the record)
    body: Callable[[Probe, str], dict[str, Any]]  # the request for a text prompt
    read: Callable[[Reply, str], ReplyT]  # the protocol's reply, or CaseFailed
    served: Callable[[ReplyT], int | None]  # the prompt tokens the reply reports


def _limit(p: Probe) -> int:
    if not p.facts.max_model_len:
        raise CaseUnsupported("/v1/models reports no max_model_len")
    return p.facts.max_model_len


def overflow(ask: TextAsk[Any]) -> Case:
    """A prompt 512 tokens over max_model_len gets a clean 400 the client can act on."""

    async def case(p: Probe) -> str:
        limit = _limit(p)
        text, count = await prompt_of(p, limit + 512, seed=7)
        reply = await p.post(ask.route, ask.body(p, text),
                             record={ask.prompt_field: f"<{count} prompt tokens>"})
        if reply.status == 400:
            return f"{count} prompt tokens over max_model_len {limit}: HTTP 400"
        raise CaseFailed(f"{count} prompt tokens over max_model_len {limit}: HTTP "
                         f"{reply.status}, expected a clean 400 the client can act on")

    return case


def long_input(ask: TextAsk[ReplyT], target_tokens: int | None) -> Case:
    """The near-limit case; `target_tokens` caps the prompt (a CPU test engine takes about a
    minute per 65K-token prefill), None means max_model_len minus headroom."""

    async def case(p: Probe) -> str:
        limit = _limit(p)
        text, count = await prompt_of(p, min(target_tokens or limit, limit) - HEADROOM, seed=11)
        if count + 16 > limit:
            raise CaseFailed(f"could not build a prompt under the limit ({count} tokens)")
        data = ask.read(await p.post(ask.route, ask.body(p, text), record={
            ask.prompt_field: f"<{count} prompt tokens>"}), "long input")
        return f"{ask.served(data) or count} of max_model_len {limit} prompt tokens served"

    return case


def _chat_prompt_tokens(data: ChatCompletion) -> int | None:
    return data.usage.prompt_tokens if data.usage else None


CHAT_ASK = TextAsk(
    route=CHAT, prompt_field="messages",
    body=lambda p, text: {"model": p.model, "messages": [{"role": "user", "content": text}],
                          "max_tokens": 16, "temperature": 0},
    read=completion, served=_chat_prompt_tokens)
