"""`python -m sm121.gateway CONFIG.json`: the launcher's GatewayConfig travels as a file
without its secrets, and the gateway takes its keys from its own environment."""

from __future__ import annotations

import stat
from pathlib import Path

from sm121.gateway.config import GatewayConfig, UpstreamSpec
from sm121.gateway.entry import read_config, ready_lines, write_config
from sm121.recipes.schema import RequestPolicy
from sm121.runs.state import RunInfo
from sm121.serving.gateway_process import gateway_config


def test_the_config_file_round_trips_without_its_secrets(tmp_path: Path) -> None:
    config = GatewayConfig(upstreams=(UpstreamSpec(url="http://127.0.0.1:8000/", name="a"),),
                           port=8123, api_keys=("client-secret",),
                           upstream_api_key="engine-secret", max_inflight=7)
    file = tmp_path / "gateway.json"
    write_config(config, file)
    text = file.read_text()
    assert "secret" not in text and stat.S_IMODE(file.stat().st_mode) == 0o600
    env = {"SM121_GATEWAY_API_KEYS": "k1,k2", "SM121_UPSTREAM_API_KEY": "up"}
    back = read_config(file, env)
    assert back == GatewayConfig(upstreams=config.upstreams, port=8123, max_inflight=7,
                                 api_keys=("k1", "k2"), upstream_api_key="up")
    assert read_config(file, {}).api_keys == ()


def test_the_launcher_builds_what_the_gateway_command_would(tmp_path: Path) -> None:
    run = RunInfo(run_id="r", recipe="tiny-cpu", profile="agent", created="x",
                  base_url="http://127.0.0.1:8000", model="tiny")
    config = gateway_config(run, "tiny-cpu", "agent", 8101, max_inflight=3)
    (spec,) = config.upstreams
    assert (config.host, config.port, config.max_inflight) == ("127.0.0.1", 8101, 3)
    assert spec.url == run.base_url and spec.max_inflight == 3
    assert spec.policy == config.policy != RequestPolicy()  # the agent profile's policy
    followed = gateway_config(run, "tiny-cpu", None, 8101, registry=tmp_path / "u.json")
    assert followed.upstreams == () and followed.registry == tmp_path / "u.json"
    assert ready_lines(followed)[-1].endswith("(watched)")
