"""The second engine end to end: `sm121 serve tiny-llamacpp` boots the real llama-server that
`make setup` builds (scripts/llamacpp-build.sh) on the tiny model written as GGUF, to a checked
first generation (and a request with tools accepted); the real gateway in front of it carries
a chat stream and an Anthropic Messages request with their usage; `connect` hands an agent the
per-slot window (-c 65536 over -np 4: 16,384), not -c; the metrics the adapter names are
exported; `bench agents` counts every turn through the gateway. A forced tool call is pinned
as the engine serves it (text first, then the call, which the random model never starts; a
named tool_choice served as auto), with what agent-check says of it; and a request whose
logit_bias makes the model start the call gets the call the template's grammar forces,
parsed into `tool_calls`, stream and not, the gateway forwarding its body byte for byte.

Its own engine (llama-server is not the session's vLLM), booted once for the module: a few
seconds on CPU."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from support import free_port, run_cli
from support.gateway_process import spawned_gateway
from support.llamacpp import put_on_path
from support.timeouts import BOOT_S, SERVE_S

from sm121.gateway.handlers import REQUEST_ID_HEADER

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
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the gateway writes each request's body as it forwards it (`--capture`, made by
    the gateway): the bytes that reached the engine."""
    return tmp_path_factory.mktemp("gateway-llamacpp-capture") / "cap"


@pytest.fixture(scope="module")
def gateway(llama_engine: str, captures: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[str]:
    with spawned_gateway(tmp_path_factory.mktemp("gateway-llamacpp"), "--upstream",
                         llama_engine, "--recipe", "tiny-llamacpp", "--capture",
                         str(captures), ready="/v1/models") as spawned:
        yield spawned.url


def _post(url: str, body: dict, headers: dict | None = None) -> bytes:
    return _exchange(url, json.dumps(body).encode(), headers)[1]


def _exchange(url: str, data: bytes, headers: dict | None = None) -> tuple[str, bytes]:
    """POST `data`; the gateway's id for the request (its capture's name) and the reply."""
    request = urllib.request.Request(url, data=data, headers={
        "Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 200
        return response.headers.get(REQUEST_ID_HEADER, ""), response.read()


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


def _token_ids(engine: str, text: str) -> list[int]:
    """`text`'s token ids in the GGUF's vocabulary (llama-server's /tokenize; `</s>` read as
    the special token)."""
    request = urllib.request.Request(f"{engine}/tokenize", data=json.dumps({
        "content": text, "parse_special": True}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return [int(t) for t in json.loads(response.read())["tokens"]]


def test_a_required_tool_call_the_model_starts_comes_back_as_the_call(
        gateway: str, llama_engine: str, captures: Path) -> None:
    """The call llama-server's template and grammar produce when the request requires one,
    through the gateway. Its grammar (the test above) forces the call once the reply reaches
    `<tool_call>\n`, which the random-weight model never writes; the request's own sampling
    parameters (the gateway changes nothing) make it write it, and the engine does the rest.
    `logit_bias` ranks the marker's six tokens in order (`<`, `tool`, `_`, `call`, `>`, `\n`:
    60 down to 10, far above the tiny model's own logits) and `presence_penalty` 100 over the
    last five tokens (llama.cpp's `repeat_last_n`) sinks each once written, so greedy decoding
    spells the marker and nothing else before it; the closing quote (5) lets a string the
    grammar opens end, and `</s>` (100) ends the reply where the grammar first allows it,
    after one whole call. Biases only reorder what the grammar allows: the function's name,
    the argument keys and the JSON come from the grammar, `tool_calls` from llama-server's
    parser of the template's format. The body reaches the engine as sent (the capture)."""
    marker = _token_ids(llama_engine, "<tool_call>\n")
    (quote,), (eos,) = _token_ids(llama_engine, '"'), _token_ids(llama_engine, "</s>")
    assert len(set(marker)) == len(marker) == 6, marker
    bias = {str(t): 10 * (len(marker) - i) for i, t in enumerate(marker)}
    bias |= {str(quote): 5, str(eos): 100}
    request = {"model": "tiny", "messages": [{"role": "user", "content": "read setup.py"}],
               "tools": TOOLS, "tool_choice": "required", "max_tokens": 200,
               "temperature": 0, "logit_bias": bias, "presence_penalty": 100,
               "repeat_last_n": len(marker) - 1}
    sent = json.dumps(request).encode()
    request_id, raw = _exchange(f"{gateway}/v1/chat/completions", sent)
    assert (captures / f"{request_id}.request").read_bytes() == sent
    choice = json.loads(raw)["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    assert not choice["message"]["content"]  # nothing before the call
    (call,) = choice["message"]["tool_calls"]
    _assert_a_read_file_call(call["function"]["name"], call["function"]["arguments"])

    sent = json.dumps({**request, "stream": True}).encode()
    request_id, raw = _exchange(f"{gateway}/v1/chat/completions", sent)
    assert (captures / f"{request_id}.request").read_bytes() == sent
    events = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    choices = [c for e in events for c in e.get("choices", [])]
    deltas = [d for c in choices for d in c["delta"].get("tool_calls") or []]
    assert {d["index"] for d in deltas} == {0}, deltas  # one call, streamed in pieces
    assert not "".join(c["delta"].get("content") or "" for c in choices)
    assert [c["finish_reason"] for c in choices if c.get("finish_reason")] == ["tool_calls"]
    _assert_a_read_file_call("".join(d["function"].get("name") or "" for d in deltas),
                             "".join(d["function"].get("arguments") or "" for d in deltas))


def _assert_a_read_file_call(name: str, arguments: str) -> None:
    assert name == "read_file"
    jsonschema.validate(json.loads(arguments), TOOLS[0]["function"]["parameters"])


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
    # llama-server says its cached count on every reply, 0 included (bench/cached.py): its
    # runs' prefix reuse is measured, never "not reported"
    assert all(t["cached_tokens"] is not None for t in turns), turns


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
