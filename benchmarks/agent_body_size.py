"""How large is the largest request a coding agent sends, and what does the gateway's body
check cost on it? Builds a Claude-Code-shaped Anthropic Messages body: many tools with JSON
schemas (a session with several MCP servers), and a long history of tool_use / tool_result
turns whose results are this repository's own source files (what an agent reads), grown
until its text fills the largest context an sm121 recipe serves (1,048,576 tokens:
the deepseek-v4-flash recipes' max-model-len). Characters per token: 4, assumed from common
BPE tokenizers on English and code (no tokenizer of those models is on this machine), so the
token count is an estimate and the byte count is measured.

Then: the body's bytes and JSON values, json.loads on it, the gateway's off-loop count
(limits.structure_problem), and the wall time of one POST of it through a real gateway
runner in front of a fake upstream that answers at once (named as such: it isolates the
gateway's own cost), against a small body's.

    PYTHONPATH=src python benchmarks/agent_body_size.py [--tokens 1048576] [--tools 120]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "unit" / "gateway"), str(ROOT / "tests")]

CHARS_PER_TOKEN = 4  # assumed (see the docstring)


def tools(count: int) -> list[dict[str, Any]]:
    """`count` tools, each with a paragraph of description and an 8-property schema."""
    out = []
    for i in range(count):
        props = {f"arg_{j}": {"type": "string", "description": f"parameter {j} of tool {i}: "
                              + "what it means and when to give it. " * 4} for j in range(8)}
        out.append({"name": f"tool_{i}", "description": "Does one thing an agent needs. " * 40,
                    "input_schema": {"type": "object", "properties": props,
                                     "required": ["arg_0"]}})
    return out


def history(chars: int) -> list[dict[str, Any]]:
    sources = [p.read_text() for p in sorted((ROOT / "src").rglob("*.py"))]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    total, turn = 0, 0
    while total < chars:
        text = sources[turn % len(sources)]
        call = f"toolu_{turn:06d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "Let me read the next file."},
            {"type": "tool_use", "id": call, "name": "tool_0",
             "input": {"arg_0": f"src/file_{turn}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": text}]})
        total += len(text)
        turn += 1
    return messages


def count_values(value: Any) -> int:
    stack, n = [value], 0
    while stack:
        item = stack.pop()
        n += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return n


async def post_time(body: bytes, repeats: int) -> float:
    import fake_upstream
    from gateway_harness import running_gateway

    from sm121.gateway.config import LocalitySettings

    # The fake's own context limit would refuse the body; the locality watch and the exact
    # count near a limit would ask the fake's /tokenize: both off, to time the gateway's
    # parse and relay alone.
    fake_upstream.MAX_MODEL_LEN = 2**31
    fake = await fake_upstream.FakeUpstream().start()
    try:
        async with running_gateway(fake.url, max_body_bytes=64 * 2**20,
                                   long_prompt_tokens=2**31,
                                   locality=LocalitySettings(enabled=False)) as gw:
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                async with gw.http.post(f"{gw.url}/v1/messages", data=body,
                                        headers={"Content-Type": "application/json"}) as reply:
                    await reply.read()
                    assert reply.status == 200, (reply.status, (await reply.text())[:300])
                times.append(time.perf_counter() - started)
            return sorted(times)[len(times) // 2]
    finally:
        await fake.stop()


def main() -> None:
    try:
        from sm121.gateway.limits import structure_problem
    except ImportError:  # a gateway before the off-loop count: time its POST only
        structure_problem = None

    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=1_048_576)
    parser.add_argument("--tools", type=int, default=120)
    args = parser.parse_args()
    body = {"model": "fake", "max_tokens": 32000, "stream": True, "system": "You are an agent.",
            "tools": tools(args.tools), "messages": history(args.tokens * CHARS_PER_TOKEN)}
    raw = json.dumps(body).encode()
    started = time.perf_counter()
    json.loads(raw)
    loads_s = time.perf_counter() - started
    started = time.perf_counter()
    problem = structure_problem(raw) if structure_problem else ("-", "no off-loop count")
    count_s = time.perf_counter() - started
    small = json.dumps({**body, "messages": body["messages"][:3]}).encode()
    big_s = asyncio.run(post_time(raw, 5))
    small_s = asyncio.run(post_time(small, 5))
    print(f"messages body for ~{args.tokens:,} tokens (assumed {CHARS_PER_TOKEN} chars/token), "
          f"{args.tools} tools, {len(body['messages']):,} messages: {len(raw):,} bytes "
          f"({len(raw) / 2**20:.1f} MiB), {count_values(body):,} JSON values")
    print(f"json.loads {loads_s * 1000:.0f} ms; off-loop count {count_s * 1000:.0f} ms "
          f"({'refused: ' + problem[1] if problem else 'within bounds'})")
    print(f"POST through the gateway (median of 5): {big_s * 1000:.0f} ms; the same tools with "
          f"3 messages ({len(small):,} bytes): {small_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
