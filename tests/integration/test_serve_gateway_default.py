"""`sm121 serve` of a recipe whose request policy strips a parameter starts its gateway without
being asked: a real tiny engine boot, the real gateway in front of it, and the bytes a client
gets back (the stripped parameter named) through the URL the start-up summary prints.

The recipe is tiny-cpu's copy with `serve_with_gateway` on: tiny-cpu itself opts out because
its policy only exercises the gateway (it protects nothing on CPU)."""

from __future__ import annotations

import json
import urllib.request
from importlib import resources
from pathlib import Path

import pytest
import yaml
from support import free_port, run_cli
from support.timeouts import BOOT_S, SERVE_S

pytestmark = pytest.mark.integration


def test_a_policy_recipe_is_served_behind_its_gateway_by_default(
        sm121_home: Path, tmp_path: Path) -> None:
    recipe = yaml.safe_load(resources.files("sm121.recipes.builtin")
                            .joinpath("tiny-cpu.yaml").read_text())
    recipe["name"] = "tiny-cpu-guarded"
    recipe["request_policy"]["serve_with_gateway"] = True
    path = tmp_path / "tiny-cpu-guarded.yaml"
    path.write_text(yaml.safe_dump(recipe))
    port, gateway_port = free_port(), free_port()
    # Our own copy of a built-in recipe: trusted as the built-in is. No --gateway given.
    done = run_cli("serve", str(path), "--profile", "agent", "--port", str(port), "--trust",
                   "--gateway-port", str(gateway_port), "--timeout", str(BOOT_S),
                   timeout=SERVE_S)
    run_id = max((sm121_home / "runs").glob("tiny-cpu-guarded-agent-*"),
                 key=lambda p: p.stat().st_mtime).name
    gateway = f"http://127.0.0.1:{gateway_port}"
    try:
        assert f"curl -s {gateway}/v1/chat/completions" in done.stdout
        assert f"{gateway}/v1  (agents should use this URL)" in done.stdout
        body = json.dumps({"model": "tiny", "prompt": "hello", "max_tokens": 4,
                           "repetition_penalty": 1.3}).encode()
        request = urllib.request.Request(f"{gateway}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.headers["X-Sm121-Stripped-Params"] == "repetition_penalty"
            assert json.loads(response.read())["usage"]["completion_tokens"] == 4
    finally:
        run_cli("stop", run_id, check=False)
