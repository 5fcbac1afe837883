"""agent-check's pure parts: call validation, stream assembly, case selection, the report."""

from __future__ import annotations

import asyncio
import json

import pytest

from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported, Status, excerpt
from sm121.bench.scenarios.agent_check.probe import Facts, Probe
from sm121.bench.scenarios.agent_check.report import markdown
from sm121.bench.scenarios.agent_check.runner import all_cases, report, run_case, select
from sm121.bench.scenarios.agent_check.tools import CheckedCall, check_call
from sm121.errors import Sm121Error
from sm121.protocols.assembly import assemble_chat_tool_calls
from sm121.protocols.replies import ToolCall


def call(arguments: object, name: str = "get_weather", id_: str | None = "c1") -> ToolCall:
    return ToolCall.model_validate(
        {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}})


def test_a_schema_valid_call_passes() -> None:
    checked = check_call(call('{"city": "Oslo", "unit": "c"}'), {"get_weather"})
    assert checked == CheckedCall("get_weather", {"city": "Oslo", "unit": "c"})
    # A case's reason quotes it as the pair it stands for.
    assert repr(checked) == "{'name': 'get_weather', 'arguments': {'city': 'Oslo', 'unit': 'c'}}"


@pytest.mark.parametrize("bad,says", [
    (call("false"), "schema"),  # what tiny-cpu answered with hermes and strict tool calling
    (call('{"city": "Rome", "unit": "c"}'), "schema"),
    (call('{"city": "Oslo"'), "not JSON"),
    (call({"city": "Oslo", "unit": "c"}), "not a JSON string"),
    (call('{"zone": "UTC"}', name="get_time"), "not one of"),
    (call('{"city": "Oslo", "unit": "c"}', id_=None), "no id"),
])
def test_invalid_calls_fail_with_the_reason(bad: ToolCall, says: str) -> None:
    with pytest.raises(CaseFailed, match=says):
        check_call(bad, {"get_weather"})


def test_stream_deltas_assemble_per_index() -> None:
    deltas = [
        {"index": 0, "id": "a", "function": {"name": "get_weather", "arguments": ""}},
        {"index": 1, "id": "b", "function": {"name": "get_time", "arguments": '{"zo'}},
        {"index": 0, "function": {"arguments": '{"city": "Oslo", '}},
        {"index": 0, "function": {"arguments": '"unit": "c"}'}},
        {"index": 1, "function": {"arguments": 'ne": "UTC"}'}},
    ]
    chunks = [{"choices": [{"delta": {"tool_calls": [d]}}]} for d in deltas]
    calls = assemble_chat_tool_calls(chunks)
    assert [c.id for c in calls] == ["a", "b"]
    assert json.loads(calls[0].function.arguments) == {"city": "Oslo", "unit": "c"}
    assert check_call(calls[1], {"get_time"}).arguments == {"zone": "UTC"}


def test_cases_are_selected_by_name_or_group() -> None:
    cases = all_cases()
    assert set(select(cases, ["tools"])) == {n for n in cases if n.startswith("tools.")}
    assert list(select(cases, ["api.models", "params.seed"])) == ["api.models", "params.seed"]
    with pytest.raises(Sm121Error, match="no agent-check case"):
        select(cases, ["nothing"])


def test_a_case_outcome_becomes_a_status_with_its_reason() -> None:
    probe = Probe(None, "http://x", Facts("m"))  # type: ignore[arg-type]

    async def failing(_: Probe) -> str:
        raise CaseFailed("bad arguments")

    async def unsupported(_: Probe) -> str:
        raise CaseUnsupported("no /v1/messages")

    async def passing(_: Probe) -> str:
        return "fine"

    results = [asyncio.run(run_case(n, c, probe)) for n, c in
               (("a", failing), ("b", unsupported), ("c", passing))]
    assert [r.status for r in results] == [Status.FAIL, Status.UNSUPPORTED, Status.PASS]
    data = report("direct", Facts("m", 4096), results, 1.0)
    written = data.to_json()
    assert written["summary"] == {"pass": 1, "fail": 1, "unsupported": 1}
    assert list(written) == ["kind", "api", "target", "model", "max_model_len", "elapsed_s",
                             "summary", "cases"]
    assert written["cases"][0] == {"name": "a", "status": "fail", "reason": "bad arguments",
                                   "evidence": []}
    assert report("direct", Facts("m"), results, 1.0, interrupted=True).to_json()["interrupted"]
    text = markdown(data)
    assert "| a | **FAIL** | bad arguments |" in text and "agent-check: direct" in text


def test_excerpts_shorten_long_contents() -> None:
    body = {"messages": [{"role": "user", "content": "x" * 5000}]}
    text = excerpt(body)
    assert "<5000 chars>" in text and len(text) < 400


def _probe(engine: str | None) -> Probe:
    from sm121.engines.registry import adapter_serving

    adapter = adapter_serving(engine)
    facts = Facts("tiny", engine=adapter.label if adapter else None,
                  forced_calls=adapter.forced_calls if adapter else None)
    return Probe(None, "http://127.0.0.1:1", facts)  # type: ignore[arg-type]


def test_a_forced_call_that_came_back_as_text_is_explained_in_the_engines_terms() -> None:
    """llama-server b11434 does not read a named tool_choice (unsupported, saying so) and its
    grammar lets text come before a required call (a failure naming that); vLLM forces both,
    so text there is a plain failure, as from a server sm121 has no adapter for."""
    from sm121.bench.scenarios.agent_check.forced import no_forced_call

    llama = _probe("llamacpp")
    named = no_forced_call(llama, "named tool_choice", "abc", named=True, cut=True)
    assert isinstance(named, CaseUnsupported)
    assert "does not read a named tool_choice" in named.message and "served as auto" in named.message
    required = no_forced_call(llama, "tool_choice required", "abc", named=False, cut=True)
    assert type(required) is CaseFailed and "lets text come first" in required.message
    assert "(llama.cpp)" in required.message
    # Not cut at max_tokens: the model stopped on its own, so the grammar is not the story.
    stopped = no_forced_call(llama, "tool_choice required", "abc", named=False, cut=False)
    assert stopped.message == "tool_choice required returned no tool call; content: 'abc'"
    for plain in (_probe("vllm"), _probe("someone-else"), _probe(None)):
        for named_call in (True, False):
            error = no_forced_call(plain, "x", "abc", named=named_call, cut=True)
            assert type(error) is CaseFailed and error.message == (
                "x returned no tool call; content: 'abc'")
