"""Request defaults: what the gateway supplies when a client omits it; the client wins."""

from __future__ import annotations

from sm121.gateway.policy import apply_policy
from sm121.protocols.routes import COMPLETIONS
from sm121.recipes.schema import RequestDefaults, RequestPolicy

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
POLICY = RequestPolicy(defaults=RequestDefaults(
    tool_choice="auto", parallel_tool_calls=False, chat_template_kwargs={"thinking": True}))


def test_defaults_fill_what_the_client_left_out() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    outcome = apply_policy(body, POLICY)
    assert body["tool_choice"] == "auto" and body["parallel_tool_calls"] is False
    assert body["chat_template_kwargs"] == {"thinking": True}
    assert set(outcome.supplied) == {"tool_choice", "parallel_tool_calls", "chat_template_kwargs"}


def test_the_client_value_wins_and_kwargs_merge_under_it() -> None:
    body = {"messages": [], "tools": TOOLS, "tool_choice": "required",
            "chat_template_kwargs": {"thinking": False, "x": 1}}
    outcome = apply_policy(body, POLICY)
    assert body["tool_choice"] == "required"
    assert body["chat_template_kwargs"] == {"thinking": False, "x": 1}
    assert outcome.supplied == ["parallel_tool_calls"]


def test_no_tool_choice_without_tools_and_no_kwargs_outside_chat() -> None:
    chat = {"messages": []}
    apply_policy(chat, POLICY)
    assert "tool_choice" not in chat  # vLLM refuses tool_choice without tools
    completion = {"prompt": "hi"}
    assert apply_policy(completion, POLICY, COMPLETIONS).supplied == []
    assert completion == {"prompt": "hi"}


def test_a_malformed_client_value_is_left_for_the_engine_to_refuse() -> None:
    body = {"messages": [], "chat_template_kwargs": "thinking"}
    apply_policy(body, POLICY)
    assert body["chat_template_kwargs"] == "thinking"


def test_an_anthropic_body_gets_no_string_tool_choice() -> None:
    body = {"messages": [], "max_tokens": 8,
            "tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    outcome = apply_policy(body, POLICY)
    assert "tool_choice" not in body and "parallel_tool_calls" not in body
    assert outcome.supplied == ["chat_template_kwargs"]  # vLLM's /v1/messages takes these


def test_the_outcome_says_whether_the_body_changed() -> None:
    assert apply_policy({"messages": [], "tools": TOOLS}, POLICY).changed  # a default alone
    assert not apply_policy({"prompt": "hi"}, POLICY, COMPLETIONS).changed
