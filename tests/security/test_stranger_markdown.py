"""Stranger strings in the Markdown sm121 writes: `sm121 bench report` (from results files and
time series) and `sm121 bench agent-check --out` (from an endpoint's replies), each through the
real command line. A results file here is a committed one (docs/results) with the strings a
stranger controls replaced: its version and date, the workload's name, a profile's name (one
the profile-name rule allows that Markdown would read: a stranger's other names are refused
where the file is read, names.AbProfile), a failed repetition's error, an engine argument, the
server's model and version, an event of a time series; the endpoint is a fake whose every error carries them. Its model id is held to
the served-model-name rule, as `sm121 connect` holds it: one that breaks it is refused.

The .md's bytes must hold no control character but its own newlines, every row of a table as
many cells as its header, and `<img` only inside code spans; read as GitHub reads it (a
CommonMark parser with GFM tables, raw HTML on), it must hold no element, heading or link the
stranger wrote, and show the stranger's text spelled out. A normal name comes out as it is."""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support import run_cli
from support.markdown_checks import START, STRANGER, check_bytes, check_rendered

from sm121.display import escape
from sm121.display_markdown import inert

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "cpu-testbed"


def _replace(data: Any, old: str, new: str) -> Any:
    """`data` with the string `old` (a value, a key, or after `N:` in an A/B's order) as `new`."""
    if isinstance(data, dict):
        return {_replace(k, old, new): _replace(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_replace(v, old, new) for v in data]
    if isinstance(data, str):
        return new if data == old else re.sub(rf"^(\d+):{re.escape(old)}$",
                                              lambda m: f"{m.group(1)}:{new}", data)
    return data


def _agents_run(folder: Path) -> Path:
    data = json.loads(gzip.decompress((RESULTS / "agents" / "coding-agent.json.gz").read_bytes()))
    data.update(sm121_version=STRANGER, created=STRANGER, error=STRANGER)
    data["server"].update(model=STRANGER, version=STRANGER)
    data = _replace(data, "coding-agent", STRANGER)  # the workload's name, everywhere
    path = folder / "run.json"
    path.write_text(json.dumps(data))
    return path


# A profile's name as the profile-name rule allows it, live in Markdown: `1.` starts an ordered
# list where a line starts, `_x_` is emphasis
PROFILE = "1._a_"


def _agents_ab(folder: Path, profile: str = PROFILE) -> Path:
    data = json.loads(gzip.decompress((RESULTS / "agents" / "ab-agents.json.gz").read_bytes()))
    data = _replace(data, "agent-admission", profile)  # a profile: table headers and rows
    last = data["samples"][-1]
    last["error"] = STRANGER  # a repetition whose boot failed, with the engine's words
    data["samples"][0]["engine_args"]["max-num-seqs"] = STRANGER
    path = folder / "ab.json"
    path.write_text(json.dumps(data))
    return path


def _timeline(folder: Path) -> Path:
    lines = (RESULTS / "soak" / "soak.jsonl").read_text().splitlines()[:40]
    lines.append(json.dumps({"kind": "event", "elapsed_s": 5.0, "what": STRANGER}))
    path = folder / "soak.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bench_report_writes_a_strangers_strings_as_text(tmp_path: Path) -> None:
    files = [_agents_run(tmp_path), _agents_ab(tmp_path), _timeline(tmp_path)]
    out = tmp_path / "report"
    run_cli("bench", "report", *map(str, files), "--out", str(out), "--title", "t")
    text = check_bytes((out / "report.md").read_bytes())
    assert "\\x1b]0;pwn\\x07" in text and "a\\|b" in text and "line\\n# heading" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    check_rendered(text, {"t", "agents (scenario) — <code>run.json</code>",
                          "agents (ab) — <code>ab.json</code>",
                          "soak timeline — <code>soak.jsonl</code>"},
                   escape(STRANGER, None))
    # Where each value went: the header's version and date, the workload, the profile's
    # column and rows beside the normal one (as it was), the failed repetition, the engine
    # argument, the event of the time series
    start = START
    assert f"status complete, sm121 {start}" in text and f"Workload **{start}" in text
    assert f"| metric | agent | {inert(PROFILE)}" in text and f"\n| {inert(PROFILE)}" in text
    assert f"Failed: rep 1 {inert(PROFILE)}: {start}" in text and "max-num-seqs=# h1 \\x1b]0;pwn" in text
    assert f"\n- {start}" in text
    assert "\n| agent | 1 | 80.0% | 0.785 s |" in text  # the normal profile's row as it was



def test_bench_report_refuses_a_profile_name_outside_the_rule(tmp_path: Path) -> None:
    """The stranger's string as a profile's name: refused where the file is read, naming the
    field, spelled out, and no report is written."""
    out = tmp_path / "report"
    result = run_cli("bench", "report", str(_agents_ab(tmp_path, STRANGER)), "--out", str(out),
                     check=False)
    assert result.returncode == 2 and "field 'params.profiles.1'" in result.stderr, result.stderr
    assert "# h1 \\x1b]0;pwn\\x07" in result.stderr and not (out / "report.md").exists()


# A model id the served-model-name rule allows, with the most of what it allows
MODEL = "org.x/odd_model:v1-2"


class _HostileEndpoint(BaseHTTPRequestHandler):
    """A fake endpoint, not an engine: /v1/models lists `model_id`, everything else answers
    400 with the stranger's words as its error message."""

    model_id = MODEL

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path == "/v1/models":
            self._reply(200, {"object": "list", "data": [
                {"id": self.model_id, "object": "model", "max_model_len": 4096}]})
        else:
            self._reply(400, {"error": {"message": STRANGER}})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply(400, {"error": {"message": STRANGER}})

    def log_message(self, *args: object) -> None:
        pass


class _HostileId(_HostileEndpoint):
    """The same, listing the stranger's model id."""

    model_id = STRANGER


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def hostile_url() -> Iterator[str]:
    yield from _serve(_HostileEndpoint)


@pytest.fixture
def hostile_id_url() -> Iterator[str]:
    yield from _serve(_HostileId)


def test_agent_check_writes_an_endpoints_words_as_text(tmp_path: Path, hostile_url: str) -> None:
    out = tmp_path / "check"
    result = run_cli("bench", "agent-check", "--url", hostile_url, "--out", str(out),
                     check=False)
    assert result.returncode == 1, result.stderr  # cases failed: the report is written
    text = check_bytes(out.with_suffix(".md").read_bytes())
    cases = re.findall(r"(?m)^### (\S+): (\w+)$", text)
    assert len(cases) > 10
    check_rendered(text, {f"agent-check: {hostile_url}", "Evidence",
                          *[f"{case}: {status}" for case, status in cases]},
                   escape(STRANGER, None)[:250])  # a reason (a table cell) cuts it
    # the model id in a code span, a reason in a table cell, a reply in a code span
    assert f"; model `{MODEL}`, max_model_len 4096" in text
    assert "| tools.auto | **FAIL** | tool_choice auto: HTTP 400: " in text
    assert "  - reply: ``" in text


def test_agent_check_refuses_a_model_id_that_is_not_a_model_name(
        tmp_path: Path, hostile_id_url: str) -> None:
    """An endpoint's id outside the served-model-name rule (model_names.py) is refused by
    name, as `sm121 connect` refuses it: spelled out, before any case runs, nothing written."""
    out = tmp_path / "check"
    result = run_cli("bench", "agent-check", "--url", hostile_id_url, "--out", str(out),
                     check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())  # the console wraps lines
    assert "lists the model id '# h1 \\x1b]0;pwn\\x07" in said and "Traceback" not in said
    assert "which is not a model name" in said and "--served-model-name" in said
    assert "\x1b" not in result.stdout + result.stderr
    assert not list(tmp_path.iterdir())  # no report, no results file
