"""The protocol descriptions: defaults rendered in each protocol's spelling, a Messages or
Responses prompt in chat form (what /tokenize and the locality watch read), error events."""

from __future__ import annotations

import json

from sm121.gateway.policy import Change, apply_policy
from sm121.protocols.chat_view import messages_to_chat, responses_to_chat
from sm121.protocols.routes import (
    CHAT,
    COMPLETIONS,
    GENERATION_ROUTES,
    MESSAGES,
    RESPONSES,
    Api,
    protocol_for,
)
from sm121.recipes.schema import RequestDefaults, RequestPolicy

POLICY = RequestPolicy(defaults=RequestDefaults(
    tool_choice="auto", parallel_tool_calls=False, chat_template_kwargs={"thinking": True}))
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
ANTHROPIC_TOOLS = [{"name": "read", "description": "Read a file.", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [{"type": "function", "name": "read", "description": "Read a file.",
                    "parameters": SCHEMA}]


def test_every_generation_route_has_its_protocol() -> None:
    assert {protocol_for(r).api for r in GENERATION_ROUTES} == set(Api)  # type: ignore[union-attr]
    assert protocol_for("/tokenize") is None


def test_messages_defaults_are_anthropic_objects() -> None:
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
            "tools": ANTHROPIC_TOOLS}
    outcome = apply_policy(body, POLICY, MESSAGES)
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["chat_template_kwargs"] == {"thinking": True}
    assert outcome.changes == {"tool_choice": Change.SUPPLIED,
                               "parallel_tool_calls": Change.SUPPLIED,
                               "chat_template_kwargs": Change.SUPPLIED}


def test_messages_required_is_any_and_the_client_choice_wins() -> None:
    required = RequestPolicy(defaults=RequestDefaults(tool_choice="required"))
    body = {"messages": [], "tools": ANTHROPIC_TOOLS}
    apply_policy(body, required, MESSAGES)
    assert body["tool_choice"] == {"type": "any"}
    named = {"messages": [], "tools": ANTHROPIC_TOOLS,
             "tool_choice": {"type": "tool", "name": "read"}}
    assert apply_policy(named, POLICY, MESSAGES).supplied == ["parallel_tool_calls",
                                                              "chat_template_kwargs"]
    assert named["tool_choice"] == {"type": "tool", "name": "read",
                                    "disable_parallel_tool_use": True}
    told = {"messages": [], "tools": ANTHROPIC_TOOLS,
            "tool_choice": {"type": "any", "disable_parallel_tool_use": False}}
    apply_policy(told, POLICY, MESSAGES)
    assert told["tool_choice"] == {"type": "any", "disable_parallel_tool_use": False}
    none = {"messages": [], "tools": ANTHROPIC_TOOLS, "tool_choice": {"type": "none"}}
    apply_policy(none, POLICY, MESSAGES)
    assert none["tool_choice"] == {"type": "none"}  # Anthropic takes no parallel flag on none


def test_messages_without_tools_get_no_tool_choice() -> None:
    body = {"messages": [], "max_tokens": 8}
    apply_policy(body, POLICY, MESSAGES)
    assert "tool_choice" not in body


def test_responses_defaults_are_the_chat_strings() -> None:
    body = {"model": "m", "input": "hi", "tools": RESPONSES_TOOLS}
    apply_policy(body, POLICY, RESPONSES)
    assert body["tool_choice"] == "auto" and body["parallel_tool_calls"] is False
    assert body["chat_template_kwargs"] == {"thinking": True}


def test_completions_get_no_defaults() -> None:
    body = {"prompt": "hi", "tools": [{"type": "function"}]}
    assert not apply_policy(body, POLICY, COMPLETIONS).changed


def test_a_stripped_parameter_is_typed_too() -> None:
    from sm121.recipes.schema import ParamPolicy, PolicyAction

    policy = RequestPolicy(params={"top_k": ParamPolicy(action=PolicyAction.STRIP,
                                                        neutral=-1, reason="x")})
    body = {"messages": [], "max_tokens": 4, "top_k": 5}
    assert apply_policy(body, policy, MESSAGES).changes == {"top_k": Change.STRIPPED}


def test_a_messages_prompt_in_chat_form_as_vllm_converts_it() -> None:
    body = {"model": "m", "max_tokens": 8, "system": [{"type": "text", "text": "Be brief."}],
            "tools": ANTHROPIC_TOOLS, "chat_template_kwargs": {"thinking": False},
            "messages": [
                {"role": "user", "content": "read a.py"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1",
                     "content": [{"type": "text", "text": "print(1)"}]},
                    {"type": "text", "text": "and now?"}]}]}
    view = messages_to_chat(body)
    assert view == {
        "model": "m", "chat_template_kwargs": {"thinking": False},
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "read a.py"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": "read", "arguments": json.dumps({"path": "a.py"})}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "print(1)"},
            {"role": "user", "content": "and now?"}],
        "tools": [{"type": "function", "function": {
            "name": "read", "parameters": SCHEMA, "description": "Read a file."}}]}


def test_a_tool_results_only_turn_is_the_tool_messages() -> None:
    body = {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}
    assert messages_to_chat(body) == {"messages": [
        {"role": "tool", "tool_call_id": "t1", "content": "ok"}]}


def test_a_responses_prompt_in_chat_form() -> None:
    body = {"model": "m", "instructions": "Be brief.", "tools": RESPONSES_TOOLS, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "read a.py"}]},
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"path":"a"}'},
        {"type": "function_call", "call_id": "c2", "name": "read", "arguments": '{"path":"b"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "function_call_output", "call_id": "c2", "output": "2"}]}
    view = responses_to_chat(body)
    assert view is not None
    assert view["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "reasoning": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read",
                                                          "arguments": '{"path":"a"}'}},
            {"id": "c2", "type": "function", "function": {"name": "read",
                                                          "arguments": '{"path":"b"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": "2"}]
    assert view["tools"] == [{"type": "function", "function": {
        "name": "read", "description": "Read a file.", "parameters": SCHEMA}}]
    assert responses_to_chat({"input": "hi"}) == {"messages": [{"role": "user",
                                                                "content": "hi"}]}


def test_what_has_no_chat_form_gets_no_view() -> None:
    assert responses_to_chat({"input": [{"type": "web_search_call", "id": "w"}]}) is None
    assert responses_to_chat({"input": "hi", "tools": [{"type": "web_search"}]}) is None
    assert responses_to_chat({"input": 5}) is None
    assert messages_to_chat({"messages": [{"role": "user", "content": [
        {"type": "server_tool_use"}]}]}) is None
    assert messages_to_chat({"messages": "hi"}) is None
    assert CHAT.chat_view({"prompt": "x"}) is None
    assert COMPLETIONS.chat_view({"prompt": "x"}) == {"prompt": "x"}


def test_each_protocol_reports_a_dead_upstream_in_its_own_stream_error() -> None:
    chat = CHAT.stream_error("gone", "upstream_disconnected", 502)
    assert chat.endswith(b"data: [DONE]\n\n") and chat.startswith(b"data: {")
    messages = MESSAGES.stream_error("gone", "upstream_disconnected", 502)
    event, data = messages.decode().strip().split("\n")
    assert event == "event: error"
    assert json.loads(data.removeprefix("data: ")) == {
        "type": "error", "error": {"type": "upstream_disconnected", "message": "gone"}}
    responses = RESPONSES.stream_error("gone", "upstream_disconnected", 502).decode()
    assert responses.startswith("event: error\ndata: ")
    assert json.loads(responses.split("data: ", 1)[1])["message"] == "gone"
