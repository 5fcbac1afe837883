"""The second engine end to end: `sm121 serve tiny-llamacpp` boots the real llama-server that
`make setup` builds (scripts/llamacpp-build.sh) on the tiny model written as GGUF, to a checked
first generation (and a request with tools accepted); the real gateway in front of it carries
a chat stream and an Anthropic Messages request with their usage; `connect` hands an agent the
per-slot window (-c 65536 over -np 4: 16,384), not -c; the metrics the adapter names are
exported; `bench agents` counts every turn through the gateway. A forced tool call is pinned
as the engine serves it (text first, then the call, which the random model never starts; a
named tool_choice served as auto), with what agent-check says of it.

Its own engine (llama-server is not the session's vLLM), booted once for the module: a few
seconds on CPU."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import free_port, run_cli
from support.gateway_process import spawned_gateway
from support.llamacpp import put_on_path
from support.timeouts import BOOT_S, SERVE_S

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]

PER_SLOT = 65536 // 4  # tiny-llamacpp: c 65536, np 4, no kvu
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}}}]


@pytest.fixture(scope="module")
def llama_engine(sm121_home: Path) -> Iterator[str]:
    put_on_path()
    port = free_port()
    run_cli("serve", "tiny-llamacpp", "--profile", "agent", "--port", str(port), "--timeout",
            str(BOOT_S), timeout=SERVE_S)
    run_dir = max((sm121_home / "runs").glob("tiny-llamacpp-agent-*"),
                  key=lambda p: p.stat().st_mtime)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        run_cli("stop", run_dir.name, check=False)


@pytest.fixture(scope="module")
def gateway(llama_engine: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway-llamacpp"), "--upstream",
                         llama_engine, "--recipe", "tiny-llamacpp",
                         ready="/v1/models") as spawned:
        yield spawned.url


def _post(url: str, body: dict, headers: dict | None = None) -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 200
        return response.read()


def test_a_chat_stream_through_the_gateway_counts_its_tokens(gateway: str) -> None:
    raw = _post(f"{gateway}/v1/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 6,
        "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True})
    events = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    text = "".join(c["delta"].get("content") or "" for e in events for c in e.get("choices", []))
    usage = [e["usage"] for e in events if e.get("usage")]
    assert text and usage and usage[-1]["completion_tokens"] == 6
    assert raw.decode().rstrip().endswith("data: [DONE]")


def test_a_messages_request_is_answered_natively(gateway: str) -> None:
    reply = json.loads(_post(f"{gateway}/v1/messages", {
        "model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        {"anthropic-version": "2023-06-01"}))
    assert reply["type"] == "message" and reply["role"] == "assistant"
    assert 1 <= reply["usage"]["output_tokens"] <= 5 and reply["usage"]["input_tokens"] > 0


def test_a_forced_tool_call_comes_back_as_text_and_agent_check_says_why(gateway: str) -> None:
    """What llama-server b11434 does with a forced call, pinned, and what sm121 says of it.
    Its grammar for `tool_choice: required` is `<|assistant|> (text until "<tool_call>")?
    tool-calls` (`-v` logs it; common/chat-auto-parser-generator.cpp makes the leading text
    optional whatever tool_choice says): the call is forced only once the model starts it,
    and the random-weight model never writes `<tool_call>`, so the reply is text cut at
    max_tokens, with no call. A named tool_choice it does not read at all (served as auto).
    vLLM decodes both under a JSON schema, so tiny-cpu calls (test_agent_check.py). agent-check
    through the gateway names the cause of each: the required case fails saying the grammar
    lets text come first, the named one is unsupported saying it is served as auto."""
    reply = json.loads(_post(f"{gateway}/v1/chat/completions", {
        "model": "tiny", "messages": [{"role": "user", "content": "read setup.py"}],
        "tools": TOOLS, "tool_choice": "required", "max_tokens": 64, "temperature": 0}))
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "length" and not choice["message"].get("tool_calls")
    assert choice["message"]["content"] and reply["usage"]["completion_tokens"] == 64
    checked = run_cli("bench", "agent-check", "--url", gateway, "--model", "tiny", "--cases",
                      "tools.required,tools.named", "--json", check=False, timeout=300)
    assert checked.returncode == 1, checked.stderr  # the required case fails
    cases = {c["name"]: c for c in json.loads(checked.stdout)["cases"]}
    required, named = cases["tools.required"], cases["tools.named"]
    assert required["status"] == "fail", required
    assert "grammar for a required tool call lets text come first" in required["reason"]
    assert "text ran to max_tokens with no call started" in required["reason"]
    assert named["status"] == "unsupported", named
    assert "llama.cpp does not read a named tool_choice" in named["reason"]
    assert "served as auto" in named["reason"]


def test_bench_agents_counts_every_turn_through_the_gateway(gateway: str,
                                                           tmp_path: Path) -> None:
    """llama-server's streamed chunks carry no token ids (vLLM's `return_token_ids`), and it
    merges the tokens of an unfinished UTF-8 character into one chunk (the random model emits
    many): the probe finds that and counts by the server's running count per chunk
    (`timings_per_token`), and every turn's count must still match its usage."""
    out = tmp_path / "agents.json"
    run_cli("bench", "agents", "--url", gateway, "--model", "tiny", "--agents", "2",
            "--turns", "3", "--out", str(out), timeout=600)
    data = json.loads(out.read_text())
    turns = [s for s in data["samples"] if s.get("kind") == "turn"]
    assert data["status"] == "complete" and len(turns) == 6 and data["probe"]["safe"]
    assert all(t["usage_checked"] for t in turns), turns
    assert all(t["completion_tokens"] == t["output_asked"] for t in turns)


def test_connect_hands_the_agent_the_per_slot_window(gateway: str) -> None:
    settings = json.loads(run_cli("connect", gateway, "--agent", "opencode", "--json",
                                  timeout=120).stdout)
    assert settings["limits"]["context"] == PER_SLOT  # not -c's 65,536
    assert all(p["ok"] for p in settings["probe"]), settings["probe"]


def test_status_and_the_metrics_the_adapter_names(llama_engine: str) -> None:
    with urllib.request.urlopen(f"{llama_engine}/metrics", timeout=30) as response:
        text = response.read().decode()
    from sm121.engines.registry import adapter_of

    names = adapter_of("llama.cpp").metrics
    for name in (*names.running, *names.prompt_tokens, *names.generation_tokens,
                 *names.prefix_hits):
        assert f"{name} " in text, name
    status = run_cli("status", "--json").stdout
    assert "tiny-llamacpp" in status


def test_top_reads_llama_servers_own_metrics(llama_engine: str, sm121_home: Path) -> None:
    """`sm121 top RUN --once` on the llama-server run, while two agents repeat one prompt:
    running and waiting from llamacpp:requests_processing and requests_deferred, token rates
    from llamacpp:prompt_tokens_total and tokens_predicted_total, and the prefix-cache hit rate
    from prompt_tokens_cached_total over prompt plus cached (llama-server has no queries
    counter, MetricNames.queries_in); what it does not export (KV usage, latency histograms)
    is null, not zero."""
    run = max((sm121_home / "runs").glob("tiny-llamacpp-agent-*"),
              key=lambda p: p.stat().st_mtime).name
    prompt = " ".join(f"step {i} of the plan reads the recipe" for i in range(60))
    stop = threading.Event()

    def agent() -> None:  # the same prompt each turn: its slot's cache serves all but the end
        while not stop.is_set():
            try:
                _post(f"{llama_engine}/v1/completions", {
                    "model": "tiny", "prompt": prompt, "max_tokens": 48, "ignore_eos": True,
                    "temperature": 0})
            except urllib.error.HTTPError:
                # llama-server answers 400 ("invalid UTF-8 byte") to a whole reply whose
                # random bytes are not UTF-8; the turn was served and counted all the same.
                continue

    agents = [threading.Thread(target=agent, daemon=True) for _ in range(2)]
    for thread in agents:
        thread.start()
    try:
        shown = run_cli("top", run, "--once", "--interval", "3", timeout=120).stdout
    finally:
        stop.set()
        for thread in agents:
            thread.join(timeout=120)
    sample = json.loads(shown.strip().splitlines()[-1])
    (target,) = sample["targets"]
    engine = target["engine"]
    assert target["run_id"] == run and not target["errors"], target
    assert engine["running"] is not None and engine["waiting"] is not None, engine
    assert engine["generation_tok_s"] > 0 and engine["prompt_tok_s"] >= 0, engine
    assert engine["prefix_hit_rate_pct"] > 50, engine
    assert engine["kv_usage_pct"] is None and engine["ttft_s"]["p50"] is None
