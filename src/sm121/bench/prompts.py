"""Prompt text for measurements: deterministic filler, prompts exact to the token (counted
by the server's own /tokenize), needles and distractors."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from sm121.bench.client import BenchClient
from sm121.errors import Sm121Error

WORDS = ("serve", "plan", "node", "engine", "prefill", "decode", "token", "budget", "request",
         "scheduler", "chunk", "cache", "prefix", "stream", "agent", "tool", "admission",
         "latency", "window", "batch", "profile", "recipe", "cluster", "fabric", "memory")
_PADS = (" .", ".", " a", ",", "a")
Counter = Callable[[str], Awaitable[int]]  # text -> its token count (the server's /tokenize)


def filler(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


async def count_tokens(client: BenchClient, text: str, special: bool = True) -> int:
    """Tokens of `text` as the server counts them; special=False leaves out BOS and the like
    (for a piece of a chat message, where the template adds them once)."""
    body = {"model": client.model, "prompt": text, "add_special_tokens": special}
    result = await client.engine.tokenize(body)
    return int(result["count"])


async def exact_prompt(client: BenchClient, n_tokens: int, head: str, seed: int = 0
                       ) -> str | list[int]:
    """`head` + filler that the server tokenises to exactly n_tokens; if the tokenizer cannot
    land exactly, the ids of a longer text cut to n_tokens are returned."""
    async def count(text: str) -> int:
        return await count_tokens(client, text)

    words, text = await search_text(count, n_tokens, head, seed)
    if text is not None:
        return text
    return await _ids(client, f"{head}{filler(words * 2, seed)}", n_tokens)


async def search_text(count: Counter, n_tokens: int, head: str, seed: int = 0
                      ) -> tuple[int, str | None]:
    """(words tried last, text) where `head` + filler counts exactly n_tokens by `count`, or
    text None when it cannot land. Filler is searched by word count (a secant step on tokens
    per word), then padded one piece at a time."""
    words = max(1, n_tokens // 2)
    for _ in range(12):
        text = f"{head}{filler(words, seed)}"
        counted = await count(text)
        if counted == n_tokens:
            return words, text
        if 0 < n_tokens - counted <= 4:
            return words, await _pad(count, text, counted, n_tokens)
        step = round((n_tokens - counted) * words / max(counted, 1))
        words = max(1, words + (step or (1 if counted < n_tokens else -1)))
    return words, None


async def salted_exact_prompt(client: BenchClient, tokens: int, seed: int
                              ) -> tuple[str | list[int], str]:
    """A prompt of exactly `tokens` tokens opened by a fresh salt tag, and the tag (for
    cache_salt): unique, so it cannot reuse any prefix cache."""
    tag = client.new_salt()
    return await exact_prompt(client, tokens, f"[{tag}] ", seed=seed), tag


async def _pad(count: Counter, text: str, counted: int, target: int) -> str | None:
    for _ in range(4 * max(1, target - counted)):
        if counted == target:
            return text
        if counted > target:
            return None
        for pad in _PADS:
            new_count = await count(text + pad)
            if new_count <= target:
                text, counted = text + pad, new_count
                break
        else:
            return None
    return text if counted == target else None


async def _ids(client: BenchClient, text: str, n_tokens: int) -> list[int]:
    result = await client.engine.tokenize({"model": client.model, "prompt": text})
    ids = [int(i) for i in result["tokens"]]
    if len(ids) < n_tokens:
        raise Sm121Error(f"could not build a prompt of {n_tokens} tokens",
                         "the server's /tokenize returned fewer tokens than asked for")
    return ids[:n_tokens]


def needle(name: str, code: str) -> str:
    return f"The access code for {name} is {code}."


def code_for(rng: random.Random) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
