"""`sm121 bench agents` on the real tiny engine: concurrent append-only chat sessions whose
usage cross-check holds every turn, with the prefix cache reused after the first turn; the
same run through `sm121 gateway --capture --redact`, replayed from the capture in order with
its gaps; and the report with its plots. Small sizes keep it to about a minute."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import TinyEngine, run_cli
from support.gateway_process import spawned_gateway

from sm121.bench.scenarios import parse_results

pytestmark = pytest.mark.integration

WORKLOAD = """preset: coding-agent
system_prompt_tokens: 1500
tools: {count: 4, tokens_each: 60}
append_tokens: [100, 200]
output_tokens: [8, 16]
think_time_s: [0.3, 0.6]
"""


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "small-agent.yaml"
    path.write_text(WORKLOAD)
    return path


@pytest.fixture(scope="module")
def capturing_gateway(tiny_engine: TinyEngine, tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("capture") / "cap"
    with spawned_gateway(folder.parent, "--upstream", tiny_engine.base_url, "--capture",
                         str(folder), "--redact", ready="/v1/models") as gateway:
        yield gateway.url, folder



def _turns(data: dict) -> list[dict]:
    return [s for s in data["samples"] if s.get("kind") == "turn"]


def test_agents_run_concurrently_append_only_and_counted(tiny_engine, workload, tmp_path):
    out = tmp_path / "agents.json"
    with_batch = tmp_path / "with-batch.yaml"
    with_batch.write_text(workload.read_text() + "background: {prompt_tokens: 3000, "
                          "output_tokens: 4}\n")
    result = run_cli("bench", "agents", "--url", tiny_engine.base_url, "--agents", "2",
                     "--turns", "3", "--workload", str(with_batch), "--slo", "ttft_p95=30s",
                     "--out", str(out), timeout=600)
    data = json.loads(out.read_text())
    assert data["status"] == "complete" and data["api"] == "chat"
    assert parse_results(data).to_json() == data  # the agents models read what it wrote
    turns = _turns(data)
    assert len(turns) == 6 and {t["agent"] for t in turns} == {0, 1}
    assert all(t["usage_checked"] and t["prompt_exact"] for t in turns)
    assert all(t["completion_tokens"] == t["output_asked"] for t in turns)
    for t in turns:
        if t["turn"] > 0:
            assert t["reuse"] >= 0.8, t  # append-only: the earlier turns are in the cache
    # sessions are concurrent: both agents' first turns were in flight at once
    firsts = sorted((t for t in turns if t["turn"] == 0), key=lambda t: t["submitted"])
    assert firsts[1]["submitted"] < firsts[0]["finished"]
    background = [s for s in data["samples"] if s.get("kind") == "background"]
    assert len(background) == 1 and 3000 < background[0]["prompt_tokens"] < 3000 + 32
    assert background[0]["submitted"] >= max(t["finished"] for t in firsts)  # after turn 1
    summary = data["summary"]
    assert summary["slo"]["goodput"] is not None and summary["tools_mode"] in (
        "api", "system_prompt")
    assert summary["engine_metrics"]["vllm:prefix_cache_hits_total"] > 0
    assert "goodput" in result.stdout
    report = run_cli("bench", "report", str(out), "--out", str(tmp_path / "report"))
    text = (tmp_path / "report" / "report.md").read_text()
    assert "report.md" in report.stdout and "| turn |" in text
    for plot in ("timeline", "ttft-cdf", "reuse"):
        assert (tmp_path / "report" / f"agents-{plot}.png").stat().st_size > 0


def test_a_capture_through_the_gateway_replays_in_order_with_its_gaps(
        tiny_engine, workload, capturing_gateway, tmp_path):
    url, folder = capturing_gateway
    original = tmp_path / "through-gateway.json"
    run_cli("bench", "agents", "--url", url, "--agents", "2", "--turns", "3", "--workload",
            str(workload), "--out", str(original), timeout=600)
    through = _turns(json.loads(original.read_text()))
    assert all(t["queue_wait_s"] is not None for t in through)  # the gateway's header
    replayed = tmp_path / "replay.json"
    run_cli("bench", "replay", str(folder), "--url", tiny_engine.base_url, "--out",
            str(replayed), timeout=600)
    data = json.loads(replayed.read_text())
    assert data["status"] == "complete"
    assert parse_results(data).to_json() == data
    agent_turns = [t for t in _turns(data) if t["session"].startswith("h:")]
    assert len(agent_turns) == 6  # the two agents' sessions, keyed by their session ids
    for session in {t["session"] for t in agent_turns}:
        rows = sorted((t for t in agent_turns if t["session"] == session),
                      key=lambda t: t["turn"])
        assert [r["submitted"] for r in rows] == sorted(r["submitted"] for r in rows)
    # redacted text was regenerated to the captured token counts
    assert all(t["prompt_exact"] for t in agent_turns)
    # The gaps are replayed: each request leaves at its scheduled time, or as soon as its
    # session's previous answer ends when that ends later (the engine slower than at capture:
    # a gap error of the engine's, counted as `held`). What the replay adds itself stays
    # within the event loop's slack on a loaded box. The gap error alone (median 22% in a
    # fresh-clone run beside two other test sessions) judged the engine's speed, not this.
    gaps = data["summary"]["gaps"]
    assert gaps["gaps"] >= 4 and gaps["held"] is not None
    for t in agent_turns:
        assert t["late_s"] - t["held_s"] <= 0.25, t


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_agents_over_messages_and_responses_are_token_exact_and_replay(
        tiny_engine, workload, capturing_gateway, tmp_path, api):
    """The same workload as Claude Code (Messages) or Codex (Responses) sends it, through
    the capturing gateway: every prompt is the chat prompt to the token and usage checks out;
    the captured session then replays in its own protocol, still token-exact."""
    url, folder = capturing_gateway
    out = tmp_path / f"agents-{api}.json"
    run_cli("bench", "agents", "--url", url, "--api", api, "--agents", "2", "--turns", "3",
            "--workload", str(workload), "--slo", "ttft_p95=30s", "--out", str(out),
            timeout=600)
    data = json.loads(out.read_text())
    assert data["status"] == "complete" and data["api"] == api
    assert parse_results(data).to_json() == data
    turns = _turns(data)
    assert len(turns) == 6 and all(t["usage_checked"] and t["prompt_exact"] for t in turns)
    # Responses takes ignore_eos; vLLM's Messages does not, so a reply may end early there
    assert all(t["completion_tokens"] == t["output_asked"] if api == "responses"
               else 0 < t["completion_tokens"] <= t["output_asked"] for t in turns)
    assert all(t["reuse"] >= 0.8 for t in turns if t["turn"] > 0)
    replayed = tmp_path / f"replay-{api}.json"
    # The module's capture holds every earlier test's traffic too, and a replay waits out
    # the original gaps: at --speed 1 each replay re-waits the whole module so far (once
    # 190 s, on a loaded host). Gap fidelity is the test above's; here it is token-exactness.
    run_cli("bench", "replay", str(folder), "--url", tiny_engine.base_url, "--out",
            str(replayed), "--speed", "50", timeout=600)
    again = [t for t in _turns(json.loads(replayed.read_text()))
             if t["path"] == f"/v1/{api}"]
    assert len(again) == 6 and all(t["prompt_exact"] and t["usage_checked"] for t in again)
