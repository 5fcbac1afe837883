"""Counting tokens, never chunks (measurement rule 1): every streamed chunk must carry its
token ids, and the sum must match the server's own usage count."""

from __future__ import annotations

from typing import Any

from sm121.errors import Sm121Error

_NO_IDS_HINT = ("the server must return token ids (vLLM: `return_token_ids`); otherwise run "
                "the scenario with --no-stream, which counts tokens from usage only")


def chunk_tokens(payload: dict[str, Any], counted: int | None = None) -> int:
    """Token ids carried by one streamed chunk. A chunk that carries text (or ends the
    choice) without ids cannot be counted: refuse rather than guess one token per chunk.

    A server with no token ids of its own may say how many tokens it has predicted so far
    (llama-server with `timings_per_token`: `timings.predicted_n`, cumulative): with the
    tokens `counted` before this chunk, the difference is this chunk's, exactly (it merges
    the tokens of an unfinished UTF-8 character into one chunk, so chunks are not tokens)."""
    predicted = (payload.get("timings") or {}).get("predicted_n")
    if (counted is not None and isinstance(predicted, int)
            and all(c.get("token_ids") is None for c in payload.get("choices") or [])):
        # The usage chunk (no choices) carries the final count too: the tokens of a character
        # left unfinished at the end were sent in no chunk of their own.
        return predicted - counted
    total = 0
    for choice in payload.get("choices") or []:
        ids = choice.get("token_ids")
        if ids is None:
            ids = _logprob_tokens(choice)
        if ids is not None:
            total += len(ids)
        elif _carries_output(choice):
            raise Sm121Error("a streamed chunk carries output but no token ids",
                             _NO_IDS_HINT)
    return total


def _logprob_tokens(choice: dict[str, Any]) -> list[Any] | None:
    """The sampled tokens a chunk's logprobs list, one entry each (chat: logprobs.content;
    completions: logprobs.tokens), when the request asked for logprobs and the server has no
    token ids of its own to send (llama-server)."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    entries = logprobs.get("content", logprobs.get("tokens"))
    return entries if isinstance(entries, list) else None


def _carries_output(choice: dict[str, Any]) -> bool:
    delta = choice.get("delta") or {}
    text = choice.get("text") or delta.get("content") or delta.get("reasoning_content")
    return bool(text) or bool(delta.get("tool_calls"))


def check_usage(counted: int, usage: dict[str, Any] | None, label: str = "stream") -> int:
    """Cross-check the counted ids against usage.completion_tokens; return the count."""
    if not usage or usage.get("completion_tokens") is None:
        raise Sm121Error(f"{label}: the server sent no usage to cross-check {counted} "
                         "counted tokens", "send stream_options.include_usage (the client does);"
                         " a server that ignores it cannot be measured safely")
    reported = int(usage["completion_tokens"])
    if reported != counted:
        raise Sm121Error(f"{label}: counted {counted} token ids but usage says {reported}",
                         "the stream lost or merged tokens; do not trust its timings")
    return counted
