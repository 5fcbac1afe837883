"""Tokenize a request the way the server will: its /tokenize with messages, tools and the chat
template, not flattened text (flattening misses the template, which is where a moved field
shows). Used by the gateway's locality watch and its context check, and by benchmarks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from sm121.errors import Sm121Error

# Request fields that change how the chat template renders, passed on to /tokenize as they are.
_CHAT_FIELDS = ("tools", "add_generation_prompt", "continue_final_message", "chat_template",
                "chat_template_kwargs", "add_special_tokens", "documents")


class TokenizeError(Sm121Error):
    """The upstream could not tokenize the request (no /tokenize, or it refused the body)."""


@dataclass(frozen=True)
class Tokenized:
    tokens: list[int]
    max_model_len: int | None

    @property
    def count(self) -> int:
        return len(self.tokens)


def tokenize_body(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The /tokenize request for a chat or completions body, or None when the prompt is not
    something /tokenize takes (token ids already, a batch, a multimodal responses input)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        request: dict[str, Any] = {"model": body.get("model"), "messages": messages,
                                   "add_generation_prompt": True}
        request.update({k: body[k] for k in _CHAT_FIELDS if k in body})
        return request
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return {"model": body.get("model"), "prompt": prompt}
    return None


def prompt_ids(body: Mapping[str, Any]) -> list[int] | None:
    """A completions prompt given as token ids needs no tokenizing."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return list(prompt)
    return None


async def tokenize(session: aiohttp.ClientSession, base_url: str, body: Mapping[str, Any],
                   headers: Mapping[str, str] | None = None,
                   timeout_s: float = 120.0) -> Tokenized:
    ids = prompt_ids(body)
    if ids is not None:
        return Tokenized(ids, None)
    request = tokenize_body(body)
    if request is None:
        raise TokenizeError("this request's prompt cannot be tokenized by /tokenize")
    try:
        async with session.post(f"{base_url}/tokenize", json=request, headers=headers,
                                timeout=aiohttp.ClientTimeout(total=timeout_s)) as response:
            if response.status != 200:
                detail = (await response.text())[:200]
                raise TokenizeError(f"/tokenize answered {response.status}: {detail}")
            data = await response.json()
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise TokenizeError(f"/tokenize failed: {exc!r}") from exc
    tokens = data.get("tokens")
    if not isinstance(tokens, list):
        raise TokenizeError("/tokenize returned no token list")
    limit = data.get("max_model_len")
    return Tokenized(tokens, limit if isinstance(limit, int) else None)
