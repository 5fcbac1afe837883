"""Secrets stay off command lines, plans and run directories; a key the engine needs is sent,
and a 401 is a clear error at once."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sm121.bench.client import BenchClient
from sm121.errors import Sm121Error
from sm121.hosts.transport import LocalTransport
from sm121.launch import runtimes
from sm121.launch.readiness import NotReady, wait_ready
from sm121.plan.model import NodePlan, ReadinessProbe, is_secret


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY",
                                  "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "MY_SECRET",
                                  "DB_PASSWORD", "GH_AUTH"])
def test_secret_names_by_their_last_word(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "NCCL_IB_GID_INDEX",
                                  "VLLM_KEY_CACHE_DTYPE", "PASSTHROUGH_MODE"])
def test_settings_that_merely_contain_a_secret_word_are_not_secrets(name: str) -> None:
    assert not is_secret(name)


def _node(env: dict[str, str], pass_env: list[str] | None = None) -> NodePlan:
    return NodePlan(name="n1", role="head", rank=0, ssh=None, runtime="native",
                    argv=["sh", "-c", 'echo "auth=$AUTH_HEADER home=$HOME"; sleep 30'],
                    env=env, pass_env=pass_env or [], start_order=0, wait_before_next="-")


def test_a_reference_to_a_secret_is_expanded_on_the_node_from_stdin(tmp_path: Path) -> None:
    node = _node({"AUTH_HEADER": "Bearer ${HF_TOKEN}", "HOME_COPY": "${HOME}"})
    launcher_env = {"HF_TOKEN": "hf_canary", "HOME": "/launcher-home"}
    refs = runtimes.sent_refs(node, launcher_env)
    stdin = runtimes.secret_input(node, launcher_env)
    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    script = runtimes.native_start_script(node.argv, node.env, files, bool(stdin), refs)
    assert "hf_canary" not in script and "/launcher-home" not in script  # the ssh command line
    started = LocalTransport().run(["sh", "-c", script], input=stdin)
    assert started.ok, started.stderr
    pid = int(started.stdout.split()[0])
    try:
        log = Path(files.log)
        for _ in range(50):
            if log.read_text():
                break
            time.sleep(0.1)
        # Expanded where it runs; the node's own HOME is left as it is.
        assert log.read_text().split() == ["auth=Bearer", "hf_canary", f"home={Path.home()}"]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not [e for e in environ if e.startswith(runtimes.REF_PREFIX.encode())]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert b"hf_canary" not in cmdline
    finally:
        LocalTransport().run_shell(f"kill -TERM -{pid}")


def test_a_docker_env_value_with_a_secret_reference_is_passed_by_name(tmp_path: Path) -> None:
    argv = ["docker", "run", "-d", "-e", "AUTH_HEADER=Bearer ${HF_TOKEN}", "-e", "PLAIN=1", "img"]
    files = runtimes.NodeFiles(run_dir=str(tmp_path / "run"))
    script = runtimes.docker_start_script(argv, "c1", files, secrets=True, refs=["HF_TOKEN"])
    assert "export AUTH_HEADER='Bearer '\"${SM121_REF_HF_TOKEN}\"" in script
    run_line = next(line for line in script.splitlines() if line.startswith("docker run"))
    assert "-e AUTH_HEADER -e PLAIN=1 img" in run_line


def test_shell_value_quotes_text_and_keeps_unsent_references() -> None:
    assert runtimes.shell_value("a'b $X ${Y} $$", refs=["X"]) == \
        "'a'\"'\"'b '\"${SM121_REF_X}\"' ${Y} ''$'"


class _Refusing(http.server.BaseHTTPRequestHandler):
    """A stand-in endpoint that refuses every request with 401, as a keyed vLLM does without
    the key: the point is how sm121 reacts to the status, not the engine."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(self.headers.get("Authorization"))
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Refusing.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_readiness_sends_the_key_and_stops_at_once_on_401(refusing_url: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    probe = ReadinessProbe(url=refusing_url, model="m", prompt="p", max_tokens=1, timeout_s=600)
    began = time.monotonic()
    with pytest.raises(NotReady, match="(?s)401 Unauthorized.*VLLM_API_KEY"):
        wait_ready(probe, began, alive=lambda: True)
    assert time.monotonic() - began < 30  # not the 600 s timeout
    assert _Refusing.seen == ["Bearer engine-key"]


async def test_bench_and_probe_send_the_key_and_name_the_401(refusing_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SM121_API_KEY", "client-key")
    async with BenchClient(refusing_url, "m") as client:  # as `bench probe` makes it: no key
        with pytest.raises(Sm121Error, match="401 Unauthorized") as caught:
            await client.get_json("/v1/models")
    assert "SM121_API_KEY" in caught.value.hint
    assert _Refusing.seen == ["Bearer client-key"]
