"""Issue 30, --redact: structural keys are kept only where the protocol puts them. On main a
Messages tool_use block's `"input": {"id": "ssn-078-05-1120", "status": "patient has HIV",
"model": "password=hunter2"}` came out of the redacted capture unchanged, because `id`,
`status` and `model` were kept at every depth; the same held for the arguments of chat tool
calls and Responses function_call items sent as objects, and for a `role` inside user content.

Driven end to end: `sm121 gateway --capture DIR --redact` in its own process in front of a
fake upstream (tests/security/recording_upstream.py) that answers with the same data; the
capture files on disk hold none of it, and the structure replay needs (roles, block types,
the tool call ids at their own level) is still there.

Failed on main before the fix: every test here (the secrets were in the capture files)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from recording_upstream import recording_upstream
from support.gateway_process import gateway_process

from sm121.gateway.redact import redact

SECRETS = ("078-05-1120", "HIV", "hunter2", "Zq7canary")
HOSTILE = {"id": "ssn-078-05-1120", "status": "patient has HIV", "model": "password=hunter2",
           "role": "Zq7canary", "type": "Zq7canary"}


def _messages_request() -> dict[str, Any]:
    return {"model": "fake", "max_tokens": 16, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look it up", "role": "HIV"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01",
                                           "name": "lookup", "input": HOSTILE}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                      "content": [{"type": "text", "text": "ok"}]}]}],
        "tools": [{"name": "lookup", "input_schema": {
            "type": "object", "properties": {"id": {"type": "string", "enum": [HOSTILE["id"]]}},
            "x-status": HOSTILE["status"]}}]}


def _messages_answer() -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
            "stop_reason": "tool_use", "content": [
                {"type": "tool_use", "id": "toolu_02", "name": "lookup", "input": HOSTILE}],
            "usage": {"input_tokens": 5, "output_tokens": 3}}


def _chat_request() -> dict[str, Any]:
    return {"model": "fake", "messages": [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "lookup", "arguments": json.dumps(HOSTILE)}},
            {"id": "call_2", "type": "function",
             "function": {"name": "lookup", "arguments": HOSTILE}}]},  # an object, not text
        {"role": "tool", "tool_call_id": "call_1", "content": "found"}],
        "metadata": {"model": HOSTILE["model"]}}


def _chat_answer() -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "fake", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "call_3", "type": "function",
                 "function": {"name": "lookup", "arguments": HOSTILE}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


def _responses_request() -> dict[str, Any]:
    return {"model": "fake", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "look it up"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
         "arguments": HOSTILE, "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": json.dumps(HOSTILE)}],
        "tools": [{"type": "function", "name": "lookup", "parameters": {
            "type": "object", "properties": {"status": {"type": "string"}}}}]}


def _responses_answer() -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "fake",
            "output": [{"type": "function_call", "id": "fc_2", "call_id": "call_2",
                        "name": "lookup", "arguments": HOSTILE, "status": "completed"}],
            "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}


ROUTES = {"/v1/messages": (_messages_request, _messages_answer),
          "/v1/chat/completions": (_chat_request, _chat_answer),
          "/v1/responses": (_responses_request, _responses_answer)}


def _assert_clean(value: Any) -> None:
    text = json.dumps(value)
    assert not [s for s in SECRETS if s in text], text


def test_the_issues_tool_use_input_is_redacted_and_its_block_keeps_its_structure() -> None:
    out = redact(_messages_request())
    _assert_clean(out)
    block = out["messages"][1]["content"][0]
    assert (block["type"], block["id"]) == ("tool_use", "toolu_01")
    assert sorted(block["input"].values()) == sorted(
        f"[redacted {len(v)} chars]" for v in HOSTILE.values())
    assert out["messages"][2]["content"][0]["tool_use_id"] == "toolu_01"
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["model"] == "fake"
    schema = out["tools"][0]["input_schema"]
    assert schema["type"] == "object" and "x-status" not in schema


def test_chat_tool_call_arguments_and_responses_function_calls_are_redacted() -> None:
    chat = redact(_chat_request())
    _assert_clean(chat)
    calls = chat["messages"][1]["tool_calls"]
    assert [(c["id"], c["type"]) for c in calls] == [("call_1", "function"), ("call_2", "function")]
    assert chat["messages"][2]["tool_call_id"] == "call_1"
    responses = redact(_responses_request())
    _assert_clean(responses)
    item = responses["input"][1]
    assert (item["type"], item["id"], item["call_id"], item["status"]) == (
        "function_call", "fc_1", "call_1", "completed")
    for answer in (_chat_answer(), _responses_answer(), _messages_answer()):
        _assert_clean(redact(answer))


def _post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json",
                                      "X-Session-Id": "s1"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        return bytes(response.read())


def test_the_real_gateway_writes_no_tool_data_into_a_redacted_capture(tmp_path: Path) -> None:
    captures = tmp_path / "captures"
    answers = {path: answer() for path, (_, answer) in ROUTES.items()}
    with recording_upstream(answers) as upstream, gateway_process(
            upstream.url, tmp_path, "--capture", str(captures), "--redact",
            "--block-size", "16") as gateway:
        for path, (request, _) in ROUTES.items():
            answered = _post(gateway.url + path, request())
            assert b"hunter2" in answered  # the client gets its data: only the capture redacts
        assert all(b"hunter2" in upstream.bodies(path)[0] for path in ROUTES)
    files = sorted(captures.iterdir())
    assert len(files) == 3 * len(ROUTES)
    for file in files:
        data = file.read_bytes()
        assert not [s for s in SECRETS if s.encode() in data], (file.name, data[:3000])
    by_path = {json.loads(m.read_text())["path"]: m.name.removesuffix(".meta.json")
               for m in captures.glob("*.meta.json")}
    messages = json.loads((captures / f"{by_path['/v1/messages']}.request").read_text())
    assert messages["messages"][1]["content"][0]["id"] == "toolu_01"
    answer = json.loads((captures / f"{by_path['/v1/messages']}.response").read_text())
    assert answer["content"][0]["id"] == "toolu_02" and answer["role"] == "assistant"
    chat = json.loads((captures / f"{by_path['/v1/chat/completions']}.response").read_text())
    assert chat["choices"][0]["message"]["tool_calls"][0]["id"] == "call_3"
    responses = json.loads((captures / f"{by_path['/v1/responses']}.request").read_text())
    assert responses["input"][1]["call_id"] == "call_1"


def test_stream_events_keep_their_structure_and_lose_the_tool_data() -> None:
    """One event's data at a time, as the capture redacts an SSE stream."""
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
                                              "role": "assistant", "model": "fake",
                                              "content": []}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_02", "name": "lookup",
                           "input": HOSTILE}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": json.dumps(HOSTILE)}},
        {"type": "response.output_item.added", "output_index": 0, "item": {
            "type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "lookup",
            "arguments": HOSTILE, "status": "in_progress"}},
        {"type": "response.function_call_arguments.done", "item_id": "fc_2",
         "arguments": json.dumps(HOSTILE)},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {
            "role": "assistant", "tool_calls": [{"index": 0, "id": "call_3", "type": "function",
                                                 "function": {"arguments": HOSTILE}}]}}]},
    ]
    out = [redact(event) for event in events]
    _assert_clean(out)
    assert out[0]["message"]["role"] == "assistant"
    assert out[1]["content_block"]["id"] == "toolu_02"
    assert out[2]["delta"]["type"] == "input_json_delta"
    assert (out[3]["item"]["call_id"], out[4]["item_id"]) == ("call_2", "fc_2")
    assert out[5]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_3"
