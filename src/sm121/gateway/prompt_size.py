"""How long a prompt is, cheaply when possible and exactly when it matters.

The fast estimate is the body's size in bytes: with byte-level tokenizers a token covers at
least one byte, so the raw JSON (which also holds keys and escapes) overstates the prompt.
A margin covers what the chat template adds. Only a request whose estimate comes near the
long-prompt threshold or the context limit is sent to the upstream's /tokenize for the exact
count, so short agent turns pay nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE_MARGIN = 256


@dataclass(frozen=True)
class PromptSize:
    tokens: int
    exact: bool


def estimate(body_bytes: int) -> PromptSize:
    return PromptSize(body_bytes + TEMPLATE_MARGIN, exact=False)


def needs_exact(size: PromptSize, output: int | None, long_threshold: int,
                max_model_len: int | None) -> bool:
    if size.exact:
        return False
    if size.tokens >= long_threshold:
        return True
    return max_model_len is not None and size.tokens + (output or 0) > max_model_len


def context_problem(prompt_tokens: int, output: int | None, max_model_len: int | None,
                    output_field: str = "max_tokens") -> str | None:
    """Why the request cannot fit the model's context, or None when it fits."""
    if max_model_len is None:
        return None
    if output is None and prompt_tokens >= max_model_len:
        return (f"the prompt has {prompt_tokens:,} tokens; the model's context "
                f"(max-model-len) is {max_model_len:,}")
    if output is not None and prompt_tokens + output > max_model_len:
        return (f"the prompt ({prompt_tokens:,} tokens) plus {output_field} ({output:,}) is "
                f"{prompt_tokens + output:,} tokens; the model's context (max-model-len) is "
                f"{max_model_len:,}")
    return None
