"""Rule 1: count tokens, never chunks; cross-check against usage; refuse when ids are missing."""

import pytest

from sm121.errors import Sm121Error
from sm121.protocols.token_ids import check_usage, chunk_tokens


def test_a_chunk_counts_its_token_ids_not_one_per_chunk():
    payload = {"choices": [{"text": "abc", "token_ids": [1, 2, 3]}]}
    assert chunk_tokens(payload) == 3


def test_chunks_without_output_count_zero():
    assert chunk_tokens({"choices": [], "usage": {"completion_tokens": 4}}) == 0
    assert chunk_tokens({"choices": [{"delta": {"role": "assistant", "content": ""}}]}) == 0


def test_output_without_ids_is_refused():
    with pytest.raises(Sm121Error, match="no token ids"):
        chunk_tokens({"choices": [{"text": "abc"}]})
    with pytest.raises(Sm121Error, match="no token ids"):
        chunk_tokens({"choices": [{"delta": {"content": "x"}}]})


def test_usage_cross_check_accepts_equal_counts():
    assert check_usage(5, {"completion_tokens": 5}) == 5


def test_usage_cross_check_refuses_disagreement_and_absence():
    with pytest.raises(Sm121Error, match="counted 4 token ids but usage says 5"):
        check_usage(4, {"completion_tokens": 5})
    with pytest.raises(Sm121Error, match="no usage"):
        check_usage(4, None)
