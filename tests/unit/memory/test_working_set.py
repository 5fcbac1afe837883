"""The working-set arithmetic that capacity and session admission share."""

import pytest

from sm121.memory.working_set import WorkingSet, blocks_for, sessions_that_fit


def test_blocks_round_up_to_whole_blocks():
    assert blocks_for(0, 16) == 0
    assert blocks_for(1, 16) == 1
    assert blocks_for(16, 16) == 1
    assert blocks_for(17, 16) == 2


def test_the_h100_pool_holds_about_nineteen_sessions_of_twenty_thousand_tokens():
    # DOMAIN.md: a 392K-token pool, sessions ending near 20.3K tokens.
    per_session = WorkingSet(prompt_tokens=20_330).blocks(16)
    assert sessions_that_fit(392_032 // 16, 0, per_session) == 19


def test_a_reserve_larger_than_the_pool_admits_nobody():
    assert sessions_that_fit(100, 150, 10) == 0
    with pytest.raises(ValueError):
        sessions_that_fit(100, 0, 0)
