"""The request policy: strip, reject, neutral values."""

from __future__ import annotations

import pytest

from sm121.gateway.policy import PolicyViolation, apply_policy, is_neutral
from sm121.recipes.schema import ParamPolicy, PolicyAction, RequestPolicy

STRIP = ParamPolicy(action=PolicyAction.STRIP, neutral=1.0, reason="crashes the engine")
REJECT = ParamPolicy(action=PolicyAction.REJECT, reason="unsupported")
POLICY = RequestPolicy(params={"repetition_penalty": STRIP, "best_of": REJECT})


def test_strip_removes_the_parameter_and_names_it() -> None:
    body = {"model": "m", "repetition_penalty": 1.2}
    outcome = apply_policy(body, POLICY)
    assert outcome.stripped == ["repetition_penalty"]
    assert body == {"model": "m"}


@pytest.mark.parametrize("value", [1.0, 1, None])
def test_neutral_value_passes_unchanged(value: object) -> None:
    body = {"repetition_penalty": value}
    assert apply_policy(body, POLICY).stripped == []
    assert body == {"repetition_penalty": value}


def test_reject_raises_naming_parameter_and_reason() -> None:
    with pytest.raises(PolicyViolation) as info:
        apply_policy({"best_of": 4}, POLICY)
    assert info.value.param == "best_of"
    assert "unsupported" in str(info.value)


def test_rejection_leaves_the_body_untouched() -> None:
    body = {"best_of": 4, "repetition_penalty": 2.0}
    with pytest.raises(PolicyViolation):
        apply_policy(body, POLICY)
    assert body == {"best_of": 4, "repetition_penalty": 2.0}


def test_absent_parameters_change_nothing() -> None:
    body = {"model": "m", "presence_penalty": 0.5}
    assert apply_policy(body, POLICY).stripped == []
    assert body == {"model": "m", "presence_penalty": 0.5}


def test_booleans_are_not_numbers() -> None:
    assert not is_neutral(True, STRIP)  # JSON true is not 1.0


def test_neutral_list() -> None:
    rule = ParamPolicy(action=PolicyAction.STRIP, neutral=[0, "none"], reason="r")
    assert is_neutral(0, rule) and is_neutral("none", rule)
    assert not is_neutral(1, rule)


@pytest.mark.parametrize("value", [1.00000000001, 0.9999999999999, 1 + 2**-52, 2])
def test_near_neutral_is_not_neutral(value: float) -> None:
    """Neutral is exactly the neutral value: anything else may take the engine's path."""
    body = {"repetition_penalty": value}
    assert apply_policy(body, POLICY).stripped == ["repetition_penalty"] and body == {}
