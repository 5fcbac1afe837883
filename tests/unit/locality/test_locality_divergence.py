"""Divergence: first differing token, reusable tokens at the block size, what changed."""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sm121.locality.divergence import APPENDED, changed_field, common_prefix, compare


def test_append_only_keeps_whole_blocks() -> None:
    previous = list(range(100))
    current = previous + [7] * 50
    result = compare(previous, current, block_size=16, changed=APPENDED)
    assert result.first_divergence == 100
    assert result.reusable_tokens == 96  # the last partial block is not cached
    assert result.kept_fraction == 0.96
    assert result.reusable_fraction == 96 / 150


def test_divergence_in_the_first_block_reuses_nothing() -> None:
    previous = list(range(1000))
    current = [0, 1, 2, 99] + previous[4:]
    result = compare(previous, current, block_size=16, changed="x")
    assert result.first_divergence == 3 and result.first_block == 0
    assert result.reusable_tokens == 0 and result.reusable_fraction == 0.0


@settings(deadline=None)  # a loaded machine must not fail a correctness test
@given(st.lists(st.integers(0, 3), max_size=300), st.lists(st.integers(0, 3), max_size=300))
def test_common_prefix_matches_the_definition(a: list[int], b: list[int]) -> None:
    n = common_prefix(a, b)
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]


def test_common_prefix_on_long_lists() -> None:
    a = list(range(20_000))
    b = a[:12_345] + [-1] + a[12_346:]
    assert common_prefix(a, b) == 12_345


def test_changed_message_and_char() -> None:
    old = {"messages": [{"role": "system", "content": "time 10:00, be brief"},
                        {"role": "user", "content": "hi"}]}
    new = {"messages": [{"role": "system", "content": "time 10:05, be brief"},
                        {"role": "user", "content": "hi"}]}
    assert changed_field(old, new) == "messages[0].content at char 9"


def test_appended_turns_are_recognised() -> None:
    old = {"messages": [{"role": "user", "content": "a"}]}
    new = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    assert changed_field(old, new) == APPENDED


def test_tools_change_is_named() -> None:
    assert changed_field({"tools": [1], "messages": []}, {"tools": [2], "messages": []}) == "tools"


def test_completions_prompt() -> None:
    assert changed_field({"prompt": "abc"}, {"prompt": "abcdef"}) == APPENDED
    assert changed_field({"prompt": "abc"}, {"prompt": "xbc"}) == "prompt at char 0"


class _CountingArray(array):
    """An int64 token array that counts element and slice reads done in Python."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        _CountingArray.reads += 1
        return super().__getitem__(index)


def test_token_arrays_take_the_fast_path() -> None:
    """Regression: slices of an array never equalled a list, so every comparison fell to a
    Python loop over each token (153 ms for 2M tokens on the event loop). Timing lives in
    benchmarks/divergence_speed.py; here the proof is that no token is read in Python."""
    a = _CountingArray("q", range(200_000))
    b = _CountingArray("q", range(200_000))
    b[150_001] = -1
    _CountingArray.reads = 0
    assert common_prefix(a, b) == 150_001
    assert _CountingArray.reads == 0
    assert compare(a, list(b), block_size=16, changed="x").first_divergence == 150_001


@settings(deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50),
       st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_fast_path_matches_the_definition(a: list[int], b: list[int]) -> None:
    n = common_prefix(array("q", a), array("q", b))
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]
