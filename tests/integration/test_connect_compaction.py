"""Issue 32's "done when": an agent-shaped session through the gateway on the tiny engine
grows past the context window and compacts instead of dying with a 400, driven only by the
limits `sm121 connect` printed, with the real anthropic and openai SDKs.

The agents themselves are not installed here, so each session is the agent's compaction rule
as its docs or source state it, fed the printed settings, and the request shape it sends:
- Claude Code (anthropic SDK, /v1/messages + count_tokens): compacts when the counted prompt
  passes CLAUDE_CODE_AUTO_COMPACT_WINDOW - min(CLAUDE_CODE_MAX_OUTPUT_TOKENS, 20,000) - 13,000
  (its autoCompact rule as reported from its source), asks max_tokens =
  CLAUDE_CODE_MAX_OUTPUT_TOKENS.
- Codex (openai SDK, /v1/responses): compacts when a turn's usage reaches
  model_auto_compact_token_limit (from the printed `-c`).
- OpenCode (openai SDK, chat): compacts when a reply's usage passes limit.context -
  limit.output, asks max_tokens = limit.output. aider's metadata (max_input_tokens) is the same bound.
The control is Claude Code's shape with its own defaults (a 200K window, 32,000 output for a
model outside its catalog): the same session gets the gateway's 400 before it compacts.

Two liberties, for time on a CPU: replies stop at the first of a few common letters (the
random model would otherwise fill max_tokens), and Codex's requests carry max_output_tokens 8
(Codex sends none, so the gateway checks only prompt < window, which the test asserts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from support import TinyEngine, run_cli
from support.gateway_process import spawned_gateway

pytestmark = pytest.mark.integration

STOP = ["e", "a", "o", " "]  # at most 4 (the stop lists of both APIs)
# What one agent turn adds (a file read, a test log): within the headroom connect leaves
# (8,192 on the tiny engine's 65,536), as the limits assume.
TOOL_OUTPUT_TOKENS = 5_000


@dataclass
class Sent:
    turn: int
    kind: str  # "turn" or "compact"
    prompt_tokens: int
    max_tokens: int | None


@pytest.fixture(scope="module")
def gateway_url(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway-compaction"), "--upstream",
                         tiny_engine.base_url, "--recipe", "tiny-cpu",
                         ready="/v1/models") as gateway:
        yield gateway.url


def _connect(url: str, agent: str) -> dict[str, Any]:
    return json.loads(run_cli("connect", url, "--agent", agent, "--json", timeout=120).stdout)


def _tool_output(turn: int, words: int) -> str:
    return f"tool output {turn}: " + " ".join(f"w{(turn * 7919 + i) % 99991}" for i in range(words))


@pytest.fixture(scope="module")
def words_per_turn(gateway_url: str) -> int:
    """Words that make TOOL_OUTPUT_TOKENS of the tiny model's tokens (its /tokenize)."""
    import urllib.request

    body = json.dumps({"model": "tiny", "prompt": _tool_output(9, 1000)}).encode()
    request = urllib.request.Request(f"{gateway_url}/tokenize", body,
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        per_1000 = int(json.load(response)["count"])
    return TOOL_OUTPUT_TOKENS * 1000 // per_1000


def _record(name: str, window: int, sent: list[Sent], folder: Path) -> None:
    """The request shapes (prompt, max_tokens, turn or compaction), written and printed; no
    request passes the window (the gateway would have answered 400, and the SDK raised)."""
    shapes = [asdict(s) for s in sent]
    (folder / f"{name}.json").write_text(json.dumps(shapes, indent=1))
    print(f"\n{name}: " + ", ".join(f"{s.kind[0]}{s.prompt_tokens}+{s.max_tokens}" for s in sent))
    assert all(s.prompt_tokens + (s.max_tokens or 1) <= window for s in sent), shapes


def _turns_until_past(window: int) -> int:
    return window // TOOL_OUTPUT_TOKENS + 3  # the session adds more than the whole window


def test_claude_code_shape_compacts_by_the_printed_window(
        gateway_url: str, words_per_turn: int, tmp_path: Path) -> None:
    env = _connect(gateway_url, "claude-code")["env"]
    window, output = int(env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]), int(
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"])
    sent = _claude_session(env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_DEFAULT_SONNET_MODEL"],
                           window, output, words_per_turn, _turns_until_past(window))
    _record("claude-code", window, sent, tmp_path)
    assert [s.kind for s in sent].count("compact") >= 1
    assert sum(TOOL_OUTPUT_TOKENS for s in sent if s.kind == "turn") > window


def test_claude_code_shape_with_its_own_defaults_dies_with_a_400(
        gateway_url: str, words_per_turn: int) -> None:
    env = _connect(gateway_url, "claude-code")["env"]
    with pytest.raises(anthropic.BadRequestError) as refused:
        _claude_session(env["ANTHROPIC_BASE_URL"], "tiny", 200_000, 32_000, words_per_turn,
                        _turns_until_past(65_536))
    assert "max-model-len" in str(refused.value) or "context" in str(refused.value)


def _claude_session(url: str, model: str, window: int, output: int, words: int,
                    turns: int) -> list[Sent]:
    client = anthropic.Anthropic(base_url=url, auth_token="any", api_key=None, max_retries=0,
                                 timeout=300)
    threshold = window - min(output, 20_000) - 13_000
    history: list[dict[str, Any]] = []
    sent: list[Sent] = []
    for turn in range(turns):
        history.append({"role": "user", "content": _tool_output(turn, words)})
        counted = client.messages.count_tokens(model=model, messages=history).input_tokens
        if counted > threshold:
            summary_max = min(output, 20_000)
            ask = [*history, {"role": "user", "content": "Summarize the session so far."}]
            sent.append(Sent(turn, "compact", counted, summary_max))
            reply = client.messages.create(model=model, max_tokens=summary_max, messages=ask,
                                           stop_sequences=STOP)
            history = [{"role": "user", "content": f"summary: {_text(reply)}"}]
            counted = client.messages.count_tokens(model=model, messages=history).input_tokens
        sent.append(Sent(turn, "turn", counted, output))
        reply = client.messages.create(model=model, max_tokens=output, messages=history,
                                       stop_sequences=STOP)
        history.append({"role": "assistant", "content": _text(reply) or "ok"})
    return sent


def _text(reply: Any) -> str:
    return "".join(getattr(block, "text", "") for block in reply.content).strip()


def test_codex_shape_compacts_at_the_printed_token_limit(
        gateway_url: str, words_per_turn: int, tmp_path: Path) -> None:
    settings = _connect(gateway_url, "codex")
    window = settings["limits"]["context"]
    limit = int(settings["command"].split("model_auto_compact_token_limit=", 1)[1].split()[0])
    client = openai.OpenAI(base_url=settings["base_url"], api_key="any", max_retries=0,
                           timeout=300)
    model, items, sent = settings["model"], [], []
    for turn in range(_turns_until_past(window)):
        items.append({"role": "user", "content": _tool_output(turn, words_per_turn)})
        reply = client.responses.create(model=model, input=items, max_output_tokens=8)
        assert reply.usage is not None
        sent.append(Sent(turn, "turn", reply.usage.input_tokens, None))
        items.append({"role": "assistant", "content": reply.output_text or "ok"})
        if reply.usage.total_tokens >= limit:
            ask = [*items, {"role": "user", "content": "Summarize the session so far."}]
            summary = client.responses.create(model=model, input=ask, max_output_tokens=8)
            assert summary.usage is not None
            sent.append(Sent(turn, "compact", summary.usage.input_tokens, None))
            items = [{"role": "user", "content": f"summary: {summary.output_text}"}]
    _record("codex", window, sent, tmp_path)
    assert [s.kind for s in sent].count("compact") >= 1
    assert max(s.prompt_tokens for s in sent) < window


def test_opencode_shape_compacts_by_its_printed_limit(
        gateway_url: str, words_per_turn: int, tmp_path: Path) -> None:
    settings = _connect(gateway_url, "opencode")
    config = json.loads(settings["files"]["~/.config/opencode/opencode.json"])
    model = settings["model"]
    limit = config["provider"]["sm121"]["models"][model]["limit"]
    client = openai.OpenAI(base_url=config["provider"]["sm121"]["options"]["baseURL"],
                           api_key="any", max_retries=0, timeout=300)
    window = settings["limits"]["context"]  # the served one; OpenCode's is less the headroom
    messages: list[dict[str, str]] = []
    sent: list[Sent] = []
    for turn in range(_turns_until_past(window)):
        messages.append({"role": "user", "content": _tool_output(turn, words_per_turn)})
        reply = _chat(client, model, messages, limit["output"])
        sent.append(Sent(turn, "turn", reply.usage.prompt_tokens, limit["output"]))
        messages.append({"role": "assistant", "content": reply.choices[0].message.content or "ok"})
        if reply.usage.total_tokens > limit["context"] - limit["output"]:
            ask = [*messages, {"role": "user", "content": "Summarize the session so far."}]
            summary = _chat(client, model, ask, limit["output"])
            sent.append(Sent(turn, "compact", summary.usage.prompt_tokens, limit["output"]))
            messages = [{"role": "user",
                         "content": f"summary: {summary.choices[0].message.content}"},
                        {"role": "assistant", "content": "ok"}]
    _record("opencode", window, sent, tmp_path)
    assert [s.kind for s in sent].count("compact") >= 1


def _chat(client: openai.OpenAI, model: str, messages: list[dict[str, str]], output: int) -> Any:
    reply = client.chat.completions.create(model=model, messages=messages,  # type: ignore[arg-type]
                                           max_tokens=output, stop=STOP)
    assert reply.usage is not None
    return reply
