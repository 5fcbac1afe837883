"""Request-parameter and endpoint cases: usage in the last chunk, max_tokens, stop, seed,
reasoning separation, /v1/models, /tokenize with tools, /v1/responses, /v1/messages."""

from __future__ import annotations

from typing import Any

from sm121.bench.scenarios.agent_check.cases_tools import CHAT, accepted, completion
from sm121.bench.scenarios.agent_check.model import CaseFailed, CaseUnsupported
from sm121.bench.scenarios.agent_check.probe import Case, Probe
from sm121.bench.scenarios.agent_check.tools import TOOLS
from sm121.protocols.replies import AnthropicMessage, ResponseObject
from sm121.protocols.routes import MESSAGES, RESPONSES

PROMPT = [{"role": "user", "content": "Write a short note about prefix caching."}]
THINK_MARKERS = ("<think>", "</think>")


def plain(p: Probe, **extra: Any) -> dict[str, Any]:
    return {"model": p.model, "messages": PROMPT, "max_tokens": 16, "temperature": 0,
            "seed": 121, **extra}


async def usage_in_last_chunk(p: Probe) -> str:
    streamed = await p.stream(CHAT, plain(p, stream_options={"include_usage": True}))
    if streamed.status != 200 or not streamed.chunks:
        raise CaseFailed(f"stream: HTTP {streamed.status}: {str(streamed.error_body)[:300]}")
    last = streamed.chunks[-1]
    usage = last.get("usage") or {}
    if not usage.get("completion_tokens"):
        raise CaseFailed(f"the last chunk carries no usage: {str(last)[:300]}")
    if last.get("choices"):
        raise CaseFailed("the usage chunk also carries choices (OpenAI sends it with none)")
    return f"last of {len(streamed.chunks)} chunks: usage {usage}"


async def max_tokens_honoured(p: Probe) -> str:
    data = completion(await p.post(CHAT, plain(p, max_tokens=5)), "max_tokens 5")
    tokens = data.usage.completion_tokens if data.usage else None
    finish = data.choices[0].finish_reason
    if not isinstance(tokens, int) or tokens > 5 or (finish == "length" and tokens != 5):
        raise CaseFailed(f"max_tokens 5 gave completion_tokens {tokens}, finish {finish!r}")
    return f"completion_tokens {tokens} <= 5, finish_reason {finish!r}"


async def stop_honoured(p: Probe) -> str:
    """Greedy decoding twice: the second request stops at a piece of the first one's text."""
    first = accepted(await p.post(CHAT, plain(p, max_tokens=24)), "without stop")
    text = first.text
    stop = stop_word(text)
    if stop is None:
        raise CaseUnsupported(f"the reply {text!r} has no piece to stop at")
    second = accepted(await p.post(CHAT, plain(p, max_tokens=24, stop=[stop])), "with stop")
    cut = second.text
    if stop in cut or not text.startswith(cut):
        raise CaseFailed(f"stop {stop!r}: got {cut!r}, expected the text before it "
                         f"{text[:text.find(stop)]!r}")
    return f"stop {stop!r} cut {len(text)} chars to {len(cut)}"


async def seed_honoured(p: Probe) -> str:
    body = plain(p, temperature=1.0, seed=4242, max_tokens=16)
    first = accepted(await p.post(CHAT, body), "seed, first")
    second = accepted(await p.post(CHAT, body), "seed, second")
    if first.content != second.content:
        raise CaseFailed(f"same seed at temperature 1 gave {first.content!r} and "
                         f"{second.content!r}")
    return "temperature 1, same seed: identical text twice"


async def reasoning_separated(p: Probe) -> str:
    """With a reasoning parser the reasoning arrives in its own field and never leaks its
    markers into content; without one the case is unsupported."""
    message = accepted(await p.post(CHAT, plain(p, max_tokens=64)), "reasoning")
    reasoning = message.reasoning or message.reasoning_content
    content = message.text
    leaked = [m for m in THINK_MARKERS if m in content]
    if reasoning:
        if leaked:
            raise CaseFailed(f"reasoning is separated, but content still holds {leaked}")
        return f"reasoning ({len(reasoning)} chars) apart from content ({len(content)})"
    if leaked:
        raise CaseFailed(f"content holds {leaked} and no reasoning field: the server needs "
                         "--reasoning-parser NAME")
    raise CaseUnsupported("no reasoning field in the reply: no reasoning parser is set, or the "
                          "model did not reason")


async def models_listed(p: Probe) -> str:
    reply = await p.get("/v1/models", shown=_model_entries)
    ids = [m.get("id") for m in reply.json().get("data") or []]
    if reply.status != 200 or p.model not in ids:
        raise CaseFailed(f"/v1/models: HTTP {reply.status}, models {ids}, expected {p.model!r}")
    return f"lists {ids}; max_model_len {p.facts.max_model_len}"


async def tokenize_with_tools(p: Probe) -> str:
    """/tokenize renders the chat template with the tools, as the engine will."""
    body = {"model": p.model, "messages": PROMPT, "add_generation_prompt": True}
    without = await p.post("/tokenize", body)
    if without.status == 404:
        raise CaseUnsupported("the server has no /tokenize")
    with_tools = await p.post("/tokenize", {**body, "tools": TOOLS})
    if not (without.ok and with_tools.ok):
        raise CaseFailed(f"/tokenize with messages: HTTP {without.status}, with tools: "
                         f"HTTP {with_tools.status}")
    bare, tooled = without.json().get("count"), with_tools.json().get("count")
    if not isinstance(bare, int) or not isinstance(tooled, int) or tooled <= bare:
        raise CaseFailed(f"tools did not reach the template: {bare} tokens without, "
                         f"{tooled} with")
    return f"{bare} tokens; {tooled} with the tools rendered"


async def responses_api(p: Probe) -> str:
    reply = await p.post(RESPONSES.route, {"model": p.model, "input": "Say hello.",
                                             "max_output_tokens": 16, "temperature": 0})
    if reply.status == 404:
        raise CaseUnsupported("the server has no /v1/responses")
    data = reply.parsed(ResponseObject, RESPONSES.route) if reply.status == 200 else None
    if data is None or data.object != "response":
        raise CaseFailed(f"/v1/responses: HTTP {reply.status}: {str(reply.body)[:300]}")
    if data.output:
        return f"status {data.status!r}, {len(data.output)} output item(s)"
    # vLLM adds a message item only for text: an empty output may be a model whose tokens
    # decode to nothing (random weights). Chat's answer to the same prompt tells which.
    chat = accepted(await p.post(CHAT, {"model": p.model, "max_tokens": 16, "temperature": 0,
                                        "messages": [{"role": "user", "content": "Say hello."}]}),
                    "the same prompt over chat")
    tokens = data.usage.output_tokens if data.usage else None
    if chat.content or not tokens:
        raise CaseFailed(f"/v1/responses: output [] ({tokens} output tokens) where chat answers "
                         f"{chat.content!r}: {str(reply.body)[:200]}")
    return (f"status {data.status!r}, output []: its {tokens} tokens decode to no text, "
            "as chat's reply to the same prompt (vLLM adds a message item only for text)")


async def anthropic_messages(p: Probe) -> str:
    reply = await p.post(MESSAGES.route, {"model": p.model, "max_tokens": 16,
                                            "messages": [{"role": "user", "content": "Hello"}]})
    if reply.status in (404, 405):
        raise CaseUnsupported("the server offers no Anthropic-style /v1/messages")
    data = reply.parsed(AnthropicMessage, MESSAGES.route) if reply.status == 200 else None
    if data is None or data.type != "message" or not data.content:
        raise CaseFailed(f"/v1/messages: HTTP {reply.status}: {str(reply.body)[:300]}")
    return f"message with {len(data.content)} content block(s), stop {data.stop_reason}"


def _model_entries(body: Any) -> Any:
    """Ids and context lengths only: vLLM's `root` is the server's model path."""
    return [{"id": m.get("id"), "max_model_len": m.get("max_model_len")}
            for m in body.get("data") or [] if isinstance(m, dict)]


def stop_word(text: str) -> str | None:
    """A short piece from the middle of the text, not at its very start."""
    for start in range(3, max(len(text) - 3, 3)):
        piece = text[start:start + 3]
        if piece.strip() and text.find(piece) == start:
            return piece
    return None


CASES: dict[str, Case] = {
    "stream.include-usage": usage_in_last_chunk,
    "params.max-tokens": max_tokens_honoured,
    "params.stop": stop_honoured,
    "params.seed": seed_honoured,
    "reasoning.separated": reasoning_separated,
    "api.models": models_listed,
    "api.tokenize-tools": tokenize_with_tools,
    "api.responses": responses_api,
    "api.messages": anthropic_messages,
}
