"""Prompt size: a cheap estimate, exact counting only near a limit, the context check."""

from __future__ import annotations

from sm121.gateway.prompt_size import PromptSize, context_problem, estimate, needs_exact
from sm121.protocols.routes import CHAT, COMPLETIONS, MESSAGES, RESPONSES


def test_short_prompt_needs_no_exact_count() -> None:
    assert not needs_exact(estimate(2_000), 256, long_threshold=16_384, max_model_len=65_536)


def test_near_the_long_threshold_counts_exactly() -> None:
    assert needs_exact(estimate(20_000), 256, long_threshold=16_384, max_model_len=None)


def test_near_the_context_limit_counts_exactly() -> None:
    assert needs_exact(estimate(3_000), 2_000, long_threshold=100_000, max_model_len=4_096)


def test_exact_size_is_not_counted_again() -> None:
    assert not needs_exact(PromptSize(50_000, exact=True), None, 16_384, 1_000)


def test_output_fields_of_each_api() -> None:
    assert CHAT.requested_output({"max_tokens": 5}) == 5
    # vLLM takes max_completion_tokens over max_tokens when a chat request has both
    assert CHAT.requested_output({"max_tokens": 5, "max_completion_tokens": 6}) == 6
    assert COMPLETIONS.requested_output({"max_tokens": 4}) == 4
    assert MESSAGES.requested_output({"max_tokens": 3}) == 3
    assert RESPONSES.requested_output({"max_output_tokens": 7}) == 7
    assert RESPONSES.requested_output({"max_tokens": 7}) is None  # not a Responses field
    assert CHAT.requested_output({"max_tokens": True}) is None


def test_context_check_names_the_numbers() -> None:
    problem = context_problem(4_000, 200, 4_096)
    assert problem is not None and "4,200" in problem and "4,096" in problem
    assert context_problem(3_000, 200, 4_096) is None
    assert context_problem(4_096, None, 4_096) is not None
    assert context_problem(10**7, 10**7, None) is None
