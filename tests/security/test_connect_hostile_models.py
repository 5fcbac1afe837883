"""Issue 30 item 4: `sm121 connect` and an endpoint's model ids, as a user runs it:
`eval "$(sm121 connect URL --agent A)"` in a real bash, the real CLI in its own process.

The endpoint is a fake (FakeHostileModelsEndpoint below): its /v1/models lists the id
`m$(touch PWNED)\\nexport EVIL=1`, and it answers 200 to everything else, so nothing but the
id can stop connect.

This failed on main before the fix: run once with PYTHONPATH on a copy of main's src at the
time of issue 30, the `blocks` form failed for all five agents (aider, codex and opencode
created PWNED: `aider --model openai/{id}`, the header comment line the newline ended, the
JSON line `"m$(touch PWNED)..."`; claude-code and openai-sdk set EVIL=1). Now the id is
refused by name, with the rule for model names, and nothing reaches stdout for eval."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support import SM121

HOSTILE = "m$(touch PWNED)\nexport EVIL=1"
AGENTS = ["aider", "claude-code", "codex", "opencode", "openai-sdk"]


class FakeHostileModelsEndpoint(BaseHTTPRequestHandler):
    """A fake endpoint, not an engine: /v1/models lists the hostile id (and `coder`), every
    other GET or POST answers an empty 200 JSON object."""

    models: list[str] = [HOSTILE, "coder"]

    def _reply(self, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path == "/v1/models":
            self._reply({"object": "list", "data": [
                {"id": m, "object": "model", "max_model_len": 4096} for m in self.models]})
        else:
            self._reply({})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply({})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHostileModelsEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _eval_in_bash(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`eval "$(sm121 connect ARGS)"` in a fresh bash in `folder`, then print EVIL."""
    connect = shlex.join([*SM121, "connect", *args])
    script = f'eval "$({connect})"\necho "EVIL=${{EVIL-unset}}"\n'
    env = {k: v for k, v in os.environ.items() if k != "EVIL"}
    return subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("form", [[], ["--shell"]], ids=["blocks", "shell"])
def test_a_hostile_model_id_is_refused_and_nothing_runs(
        hostile_url: str, tmp_path: Path, agent: str, form: list[str]) -> None:
    result = _eval_in_bash(tmp_path, hostile_url, "--agent", agent, *form)
    assert not (tmp_path / "PWNED").exists(), result.stdout + result.stderr
    assert "EVIL=unset" in result.stdout, result.stdout
    assert "EVIL=1" not in result.stdout
    said = " ".join(result.stderr.split())
    assert repr(HOSTILE) in said  # which id, as repr: its newline cannot break a line
    assert "not a model name" in said and "letter or digit" in said  # why, and what is allowed


def test_the_same_endpoint_is_usable_with_a_model_named_by_the_rule(
        hostile_url: str, tmp_path: Path) -> None:
    """The refusal is of that id, not of the endpoint: --model coder works, through eval."""
    script_out = _eval_in_bash(tmp_path, hostile_url, "--agent", "aider", "--model", "coder",
                               "--shell")
    assert not (tmp_path / "PWNED").exists()
    assert "EVIL=unset" in script_out.stdout, script_out.stderr
    connect = shlex.join([*SM121, "connect", hostile_url, "--agent", "aider", "--model",
                          "coder", "--shell"])
    check = subprocess.run(["bash", "-c", f'eval "$({connect})"; echo "$OPENAI_API_BASE"'],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == f"{hostile_url}/v1", check.stderr


def test_a_url_with_a_newline_is_refused_before_it_reaches_a_comment_line(tmp_path: Path) -> None:
    result = _eval_in_bash(tmp_path, "http://127.0.0.1:9/\nexport EVIL=1", "--agent", "codex")
    assert "EVIL=unset" in result.stdout and result.returncode == 0
    assert "not an endpoint URL" in " ".join(result.stderr.split())
