"""`bench agents --api messages|responses`: each turn in the protocol's own shape, built so the
engine renders the same chat prompt (the chat /tokenize count is then every protocol's
expected prompt); the streams read back into the chat-shaped record."""

from __future__ import annotations

import json

import pytest

from sm121.bench.client import StreamRecord
from sm121.errors import Sm121Error
from sm121.protocols.chat_view import messages_to_chat, responses_to_chat
from sm121.protocols.requests import messages_body, responses_body
from sm121.protocols.stream_readers import MessagesReader, ResponsesReader

TOOLS = [{"type": "function", "function": {
    "name": "read_file_0", "description": "read_file_0: reads",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
CONVERSATION = [
    {"role": "system", "content": "[salt] You are a coding agent."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file_0", "arguments": json.dumps({"path": "a.py"})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": "Next."},
]


def test_a_messages_turn_is_the_chat_prompt_as_vllm_converts_it() -> None:
    body = messages_body("m", CONVERSATION, 32, TOOLS)
    assert body["system"] == "[salt] You are a coding agent."
    assert body["max_tokens"] == 32 and body["tools"][0]["input_schema"]["type"] == "object"
    view = messages_to_chat(body)
    assert view is not None and view["messages"] == CONVERSATION
    assert view["tools"] == [{"type": "function", "function": {
        "name": "read_file_0", "parameters": TOOLS[0]["function"]["parameters"],
        "description": "read_file_0: reads"}}]


def test_a_responses_turn_is_the_chat_prompt_too() -> None:
    body = responses_body("m", CONVERSATION, 32, TOOLS)
    assert body["max_output_tokens"] == 32 and body["ignore_eos"] is True
    view = responses_to_chat(body)
    assert view is not None and view["messages"] == CONVERSATION  # vLLM merges the same way


def _events(reader: object, events: list[dict]) -> None:
    for i, event in enumerate(events):
        reader.take(event, float(i))  # type: ignore[attr-defined]
    reader.finish()  # type: ignore[attr-defined]


def test_a_messages_stream_reads_into_the_chat_record() -> None:
    record = StreamRecord(label="t", submitted=0.0)
    _events(MessagesReader(record), [
        {"type": "message_start", "message": {"usage": {
            "input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "t1", "name": "read_file_0"}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": '{"path":'}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": '"a.py"}'}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 4}},
        {"type": "message_stop"}])
    assert record.text == "a" and record.finish_reason == "tool_use"
    assert record.tool_calls == [{"id": "t1", "type": "function", "function": {
        "name": "read_file_0", "arguments": '{"path":"a.py"}'}}]
    assert record.prompt_tokens == 100 and record.cached_tokens == 90
    assert record.tokens == 4 and record.chunk_tokens == [1, 1, 2]  # 3 events, 4 tokens
    assert record.usage is not None and record.usage["events_match_usage"] is False


def test_a_messages_usage_without_cache_reads_says_nothing_of_reuse() -> None:
    """vLLM 0.21's Messages usage has no cache_read_input_tokens: reuse is unknown, not 0%."""
    record = StreamRecord(label="t", submitted=0.0)
    _events(MessagesReader(record), [
        {"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"}])
    assert record.prompt_tokens == 10 and record.cached_tokens is None


def test_a_responses_stream_reads_into_the_chat_record() -> None:
    record = StreamRecord(label="t", submitted=0.0)
    _events(ResponsesReader(record), [
        {"type": "response.created"},
        {"type": "response.output_text.delta", "delta": "he"},
        {"type": "response.output_text.delta", "delta": "llo"},
        {"type": "response.completed", "response": {"status": "incomplete", "usage": {
            "input_tokens": 50, "output_tokens": 2,
            "input_tokens_details": {"cached_tokens": 32}}}}])
    assert record.text == "hello" and record.finish_reason == "length"
    assert record.prompt_tokens == 50 and record.cached_tokens == 32 and record.tokens == 2
    assert record.usage is not None and record.usage["events_match_usage"] is True


def test_a_stream_without_usage_or_with_more_events_than_tokens_is_refused() -> None:
    with pytest.raises(Sm121Error, match="without usage"):
        _events(ResponsesReader(StreamRecord(label="t", submitted=0.0)),
                [{"type": "response.output_text.delta", "delta": "x"}])
    with pytest.raises(Sm121Error, match="content events"):
        _events(ResponsesReader(StreamRecord(label="t", submitted=0.0)), [
            {"type": "response.output_text.delta", "delta": "x"},
            {"type": "response.output_text.delta", "delta": "y"},
            {"type": "response.completed", "response": {"usage": {
                "input_tokens": 5, "output_tokens": 1}}}])


def test_messages_and_responses_are_for_the_agents_scenario_only() -> None:
    from support import invoke_cli

    for args in (("bench", "overlap", "--url", "http://127.0.0.1:9", "--api", "messages"),
                 ("bench", "ab", "tiny-cpu", "--profiles", "agent", "--scenario", "overlap",
                  "--api", "responses")):
        result = invoke_cli(*args, check=False)
        assert result.returncode == 2 and "for the agents scenario" in result.stderr, args
    unknown = invoke_cli("bench", "agents", "--url", "http://127.0.0.1:9", "--api", "grpc",
                         check=False)
    assert unknown.returncode == 2 and "unknown --api" in unknown.stderr
