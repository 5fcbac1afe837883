"""`retrieval`: needles at depths (default 8%, 50%, 92%) with distractor codes, at the
context lengths you choose. A needle is found when its code is in the answer; a distractor
is returned when another needle's code is."""

from __future__ import annotations

import random

from sm121.bench.context import Context
from sm121.bench.prompts import code_for, count_tokens, filler, needle
from sm121.bench.scenarios.retrieval.models import (
    RetrievalSample,
    RetrievalSettings,
    RetrievalSummary,
)

NAMES = ("Aurora", "Basalt", "Cobalt", "Dune", "Ember", "Fjord", "Granite", "Harbor")


def haystack(words: list[str], insertions: list[tuple[float, str]]) -> str:
    """Filler words with sentences inserted at fractional depths."""
    out = list(words)
    for depth, sentence in sorted(insertions, reverse=True):
        out.insert(round(depth * len(words)), sentence)
    return " ".join(out)


def score(answer: str, code: str, distractor_codes: list[str]) -> tuple[bool, list[str]]:
    """(the needle's code was answered, the distractor codes answered)."""
    return code in answer, [d for d in distractor_codes if d in answer]


async def retrieval(ctx: Context, p: RetrievalSettings) -> RetrievalSummary:
    probe = filler(400, seed=3)
    tokens_per_word = await count_tokens(ctx.client, probe) / 400
    rows = []
    cases = [(n, d) for n in p.lengths for d in p.depths]
    for index, (length, depth) in enumerate(cases):
        ctx.progress(f"retrieval {length} tokens, depth {depth:.0%}", index, len(cases))
        rows.append(await _case(ctx, p, int(length), float(depth), tokens_per_word, index))
    return RetrievalSummary(
        found=sum(bool(r.found) for r in rows), cases=len(rows),
        distractors_returned=sum(len(r.distractors_returned) for r in rows),
        by_length={str(n): sum(bool(r.found) for r in rows if r.length == n)
                   for n in p.lengths})


async def _case(ctx: Context, p: RetrievalSettings, length: int, depth: float,
                tokens_per_word: float, index: int) -> RetrievalSample:
    rng = random.Random(index)
    names = rng.sample(NAMES, 1 + p.distractors)
    codes = [code_for(rng) for _ in names]
    others = [d for d in (0.3, 0.7, 0.15, 0.85) if abs(d - depth) > 0.1][:len(names) - 1]
    insertions = [(depth, needle(names[0], codes[0]))]
    insertions += [(d, needle(n, c)) for d, n, c in zip(others, names[1:], codes[1:],
                                                          strict=False)]
    question = f"\nQuestion: what is the access code for {names[0]}? " \
               f"Answer: the access code for {names[0]} is"
    words = filler(max(1, int(length / tokens_per_word)), seed=index).split(" ")
    record = await ctx.client.complete(haystack(words, insertions) + question,
                                       p.max_tokens, f"needle-{index}", ignore_eos=False)
    found, distractors = score(record.text, codes[0], codes[1:])
    sample = RetrievalSample(length=length, depth=depth, prompt_tokens=record.prompt_tokens,
                             ttft_s=record.ttft, code=codes[0], answer=record.text,
                             found=found, distractors_returned=distractors)
    ctx.add(sample)
    return sample
