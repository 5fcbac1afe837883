"""Reps per boot: the boot order, and the test of the second repetition on a boot against
the first (bench/boot_effect.py)."""

from typing import Any

import pytest

from sm121.bench.ab import boot_order
from sm121.bench.boot_effect import boot_effect, describe, sign_test
from sm121.bench.result_models import AbEntry, Open


def test_boot_order_groups_repetitions_per_boot_and_alternates_between_boots():
    assert boot_order(["a", "b"], 3, 3) == [(0, "a", [0, 1, 2]), (0, "b", [0, 1, 2])]
    assert boot_order(["a", "b"], 3, 2) == [(0, "a", [0, 1]), (0, "b", [0, 1]),
                                            (1, "b", [2]), (1, "a", [2])]
    assert boot_order(["a", "b"], 2, 1) == [(0, "a", [0]), (0, "b", [0]),
                                            (1, "b", [1]), (1, "a", [1])]


def test_sign_test_is_exact_and_two_sided():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert sign_test(3, 3) == 1.0


def _sample(profile, boot, k, value, error=None):
    return AbEntry[Any, Open].model_validate(
        {"profile": profile, "rep": k, "boot_index": boot, "rep_on_boot": k, "error": error,
         "metrics": {} if error else {"m": value}})


def test_pairs_come_from_one_boot_and_a_lean_one_way_is_systematic():
    samples = [s for b in range(6) for s in (_sample("a", b, 0, 1.0), _sample("a", b, 1, 1.2))]
    effect = boot_effect(samples, "m")
    assert effect.n == 6 and effect.later_higher == 6
    assert effect.median_ratio == pytest.approx(1.2)
    assert effect.verdict.startswith("systematic: the later repetition is higher")
    three = [_sample("a", 0, k, v) for k, v in enumerate((1.0, 1.1, 0.9))]
    assert [(p.k, p.later) for p in boot_effect(three, "m").pairs] == [(1, 1.1), (2, 0.9)]


def test_mixed_pairs_are_no_systematic_difference_and_few_pairs_are_said_to_be_few():
    values = [(1.0, 1.1), (1.0, 0.9), (2.0, 2.2), (2.0, 1.8), (1.0, 1.05), (1.0, 0.95)]
    samples = [s for b, (x, y) in enumerate(values)
               for s in (_sample("a", b, 0, x), _sample("a", b, 1, y))]
    samples.append(_sample("a", 9, 1, 5.0))  # no first repetition on boot 9: no pair
    samples += [_sample("b", 0, 0, 1.0), _sample("b", 0, 1, None, error="boom")]
    effect = boot_effect(samples, "m")
    assert effect.n == 6 and effect.verdict == "no systematic difference detected"
    assert effect.sign_test_p == 1.0
    few = boot_effect(samples[:4], "m")
    assert few.verdict.startswith("too few pairs")
    assert "2 pairs" in describe({"m": few})[0]
