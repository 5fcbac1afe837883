"""agent-check's typed view of the replies: what a case reads, what it echoes back on the
next turn (as it came, unknown keys kept), and streams assembled into the same models."""

from __future__ import annotations

import json

import pytest

from sm121.bench.scenarios.agent_check.model import CaseFailed
from sm121.bench.scenarios.agent_check.probe import Reply
from sm121.protocols.assembly import (
    MalformedStream,
    assemble_messages_stream,
    assemble_responses_stream,
    message_tool_uses,
    response_calls,
)
from sm121.protocols.replies import AnthropicMessage, ChatCompletion, ResponseObject

CALL = {"id": "c1", "type": "function", "index": 0,
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "c"}'}}


def test_a_chat_tool_call_is_echoed_as_it_came() -> None:
    reply = Reply(200, {"choices": [{"message": {"role": "assistant", "content": None,
                                                 "tool_calls": [CALL]},
                                     "finish_reason": "tool_calls"}],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 4}})
    data = reply.parsed(ChatCompletion, "chat")
    message = data.choices[0].message
    assert message.calls[0].echoed() == CALL  # "index", unknown to the model, kept
    assert data.usage is not None and data.usage.prompt_tokens == 9
    assert str(data.usage) == "{'prompt_tokens': 9, 'completion_tokens': 4}"


def test_a_reply_that_does_not_fit_fails_the_case() -> None:
    with pytest.raises(CaseFailed, match="not a ChatCompletion"):
        Reply(200, {"choices": "none"}).parsed(ChatCompletion, "chat")


def test_messages_and_responses_calls_read_as_chat_calls() -> None:
    message = AnthropicMessage.model_validate({"type": "message", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "get_time", "input": {"zone": "UTC"}}]})
    [use] = message_tool_uses(message.content)
    assert (use.id, use.function.name, json.loads(use.function.arguments)) == (
        "t1", "get_time", {"zone": "UTC"})
    assert message.text() == "Let me look."
    response = ResponseObject.model_validate({"object": "response", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
        {"type": "function_call", "call_id": "f1", "name": "get_time",
         "arguments": '{"zone": "CET"}', "id": "fc_1"}]})
    [call] = response_calls(response.output)
    assert (call.id, call.function.arguments) == ("f1", '{"zone": "CET"}')
    assert response.texts() == ["Hi"]


def test_a_messages_stream_assembles_into_the_reply() -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 12}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "t1", "name": "get_time", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"zone": '}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '"UTC"}'}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]
    streamed = assemble_messages_stream(events)
    assert streamed.stopped and streamed.message.stop_reason == "tool_use"
    assert streamed.message.content[0].input == {"zone": "UTC"}
    usage = streamed.message.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (12, 7)
    with pytest.raises(MalformedStream, match="not JSON"):
        assemble_messages_stream(events[:3])


def test_a_responses_stream_assembles_its_calls_and_final_response() -> None:
    events = [
        {"type": "response.output_item.added",
         "item": {"type": "function_call", "id": "fc_1", "call_id": "f1", "name": "get_time"}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
         "delta": '{"zone": "UTC"}'},
        {"type": "response.completed",
         "response": {"object": "response", "status": "completed",
                      "usage": {"input_tokens": 5, "output_tokens": 3}}},
    ]
    streamed = assemble_responses_stream(events)
    assert [(c.id, c.function.arguments) for c in streamed.calls] == [("f1", '{"zone": "UTC"}')]
    assert streamed.response is not None and streamed.response.status == "completed"
    assert assemble_responses_stream(events[:2]).response is None
