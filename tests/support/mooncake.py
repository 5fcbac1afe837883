"""A small trace in Mooncake's format (kvcache-ai/Mooncake FAST25-release/traces), made here:
multi-turn sessions that share one system-prompt block, each turn the session's previous
prompt plus new blocks (a conversation's reuse), so the hits it implies are known exactly.

`python tests/support/mooncake.py > trace.jsonl` writes the default one."""

from __future__ import annotations

import json
import sys


def conversation_trace(sessions: int = 3, turns: int = 3, new_blocks: int = 2,
                       gap_ms: int = 1500, block: int = 512, tail: int = 100,
                       output: int = 8) -> list[dict[str, object]]:
    """Session s's turn t goes out at (t * sessions + s) * gap_ms: one request at a time, each
    turn after its session's previous one. Its prompt is block 0 (shared by all), the
    session's earlier blocks and `new_blocks` new ones, the last cut to `tail` tokens."""
    lines: list[dict[str, object]] = []
    next_id = 1
    history: dict[int, list[int]] = {s: [0] for s in range(sessions)}
    for t in range(turns):
        for s in range(sessions):
            ids = history[s] + list(range(next_id, next_id + new_blocks))
            next_id += new_blocks
            history[s] = ids
            lines.append({"timestamp": (t * sessions + s) * gap_ms,
                          "input_length": (len(ids) - 1) * block + tail,
                          "output_length": output, "hash_ids": ids})
    return lines


def jsonl(lines: list[dict[str, object]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(jsonl(conversation_trace()))
