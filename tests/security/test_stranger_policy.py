"""Issue 30, policy: a parameter is neutral only at exactly its neutral value. On main
`repetition_penalty: 1.00000000001` reached the engine byte for byte where 1.5 was stripped
(policy.py compared with abs_tol=1e-9), though the crash the recipe strips it for depends on
the engine taking the penalty path, which any value other than exactly 1.0 may do.

Driven through `sm121 gateway --recipe deepseek-v4-flash` (the built-in recipe that strips
it) in its own process, in front of a fake upstream (tests/security/recording_upstream.py)
that records the bytes it receives: a near-neutral value is stripped like any other and
counted in sm121_gateway_params_stripped_total; exactly 1.0 (and 1) pass as the client sent
them.

Failed on main before the fix: test_a_near_neutral_penalty_never_reaches_the_engine (the
upstream received the value)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from recording_upstream import recording_upstream
from support.gateway_process import gateway_process

from sm121.engines.prometheus import parse_samples

CHAT = "/v1/chat/completions"
ANSWER = {"id": "chatcmpl-1", "object": "chat.completion", "model": "fake", "choices": [
    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}


def _send(url: str, penalty: str) -> tuple[bytes, str | None]:
    """The body as raw text, so the number's spelling is the client's own."""
    raw = ('{"model": "fake", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}],'
           f' "repetition_penalty": {penalty}}}').encode()
    request = urllib.request.Request(url + CHAT, raw, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        return raw, response.headers.get("X-Sm121-Stripped-Params")


def test_a_near_neutral_penalty_never_reaches_the_engine(tmp_path: Path) -> None:
    with recording_upstream({CHAT: ANSWER}) as upstream, gateway_process(
            upstream.url, tmp_path, "--recipe", "deepseek-v4-flash",
            "--block-size", "16") as gateway:
        sent = {penalty: _send(gateway.url, penalty)
                for penalty in ("1.00000000001", "0.9999999999999", "1.5", "1.0", "1")}
        received = upstream.bodies(CHAT)
        with urllib.request.urlopen(gateway.url + "/metrics", timeout=30) as response:
            samples = parse_samples(response.read().decode())
    assert len(received) == 5
    for (penalty, (raw, header)), got in zip(sent.items(), received, strict=True):
        if penalty in ("1.0", "1"):
            assert got == raw, (penalty, got)  # neutral: the client's bytes, unchanged
            assert header is None
        else:
            assert b"repetition_penalty" not in got, (penalty, got)
            assert json.loads(got)["messages"] == json.loads(raw)["messages"]
            assert header == "repetition_penalty"
    assert [value for name, labels, value in samples
            if name == "sm121_gateway_params_stripped_total"
            and labels.get("param") == "repetition_penalty"] == [3.0]
