"""One agent session's conversation: what it sends each turn, append-only.

Turn 0 is a system prompt (opened by the session's salt), the user's task and the tool
definitions. Every later turn appends what the assistant really answered and a tool result of
an exact token length (now and then a pasted blob instead). Nothing before is ever rewritten,
so the prefix cache works as it does for a real agent, except in `timestamp_first`, where the
system prompt opens with a timestamp that changes every turn (the anti-pattern, on purpose).

Text pieces are exact to the token by a counter (the server's /tokenize without special
tokens); the pure parts take the counter as an argument, so tests can use their own.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from sm121.bench.prompts import Counter, search_text
from sm121.bench.scenarios.agents.messages import FunctionSpec, ToolSpec
from sm121.bench.scenarios.agents.workload import Workload
from sm121.errors import Sm121Error
from sm121.protocols.replies import ChatMessage, ToolCall

TOOL_NAMES = ("read_file", "write_file", "run_tests", "grep", "list_dir", "apply_patch",
              "run_shell", "git_diff", "git_log", "open_url", "search_docs", "lint")


async def exact_text(count: Counter, tokens: int, head: str, seed: int) -> str:
    """`head` + filler of exactly `tokens` tokens by `count` (a few seeds are tried: some
    tokenizers cannot land one particular text on an exact length)."""
    for attempt in range(4):
        _, text = await search_text(count, tokens, head, seed=seed * 7919 + attempt)
        if text is not None:
            return text
    raise Sm121Error(f"could not build a text of exactly {tokens} tokens",
                     "the server's tokenizer cannot land this length; change the workload size")


async def tool_definitions(count: Counter, workload: Workload) -> list[ToolSpec]:
    """OpenAI function tools, each with a description of exactly tokens_each tokens. Shared by
    every session (as a real agent framework's tools are)."""
    tools = []
    for index in range(workload.tools.count):
        name = f"{TOOL_NAMES[index % len(TOOL_NAMES)]}_{index}"
        description = await exact_text(count, workload.tools.tokens_each, f"{name}: ",
                                        seed=workload.seed * 1000 + index)
        tools.append(ToolSpec(type="function", function=FunctionSpec(
            name=name, description=description,
            parameters={"type": "object", "properties": {"path": {"type": "string"}},
                        "required": ["path"]})))
    return tools


def tools_as_text(tools: list[ToolSpec]) -> str:
    """Tool definitions for a system prompt, where a server refuses `tools` (or a template
    renders them before the messages and the workload wants the system prompt first)."""
    return "\n\n# Tools\n" + "\n".join(json.dumps(t.function.model_dump(mode="json", exclude_unset=True))
                                          for t in tools)


def flat_prompt(messages: list[ChatMessage]) -> str:
    """Messages as one completions prompt (`--api completions`): role lines, in order, so
    the flattened prompt is as append-only as the messages."""
    return "".join(f"<|{m.role}|>\n{m.text}\n" for m in messages) + \
        "<|assistant|>\n"


def timestamp(turn: int) -> str:
    # A fixed-width clock that changes every turn: the same length each turn, different text.
    return f"[now: 2026-12-01T{10 + turn // 3600 % 14:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}Z]"


@dataclass
class Conversation:
    """One session's messages; `request()` is what turn `turn` sends."""

    workload: Workload
    salt: str
    seed: int
    messages: list[ChatMessage] = field(default_factory=list)
    tools_in_prompt: str = ""  # set when the tools travel in the system prompt
    turn: int = 0
    last_paste: bool = False  # the latest appended result was a pasted blob

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.workload.seed}:{self.seed}")

    async def open(self, count: Counter) -> None:
        """The system prompt (exact size, salted by the session) and the user's task."""
        w = self.workload
        system = await exact_text(count, w.system_prompt_tokens, f"[session {self.salt}]\n",
                                  seed=self.seed)
        task = await exact_text(count, w.task_tokens, "Task: ", seed=self.seed + 500_000)
        self.messages = [ChatMessage(role="system", content=system + self.tools_in_prompt),
                         ChatMessage(role="user", content=task)]

    def request(self) -> list[ChatMessage]:
        """This turn's messages. Append-only, but for the timestamp-first anti-pattern, where
        only the opening timestamp of the system prompt changes."""
        if not self.workload.timestamp_first:
            return self.messages
        opening = self.messages[0]
        first = opening.model_copy(update={"content": f"{timestamp(self.turn)}\n{opening.text}"})
        return [first, *self.messages[1:]]

    def draw_turn(self) -> tuple[int, bool, int, float]:
        """(output tokens, paste?, tokens to append after this turn, think seconds)."""
        w = self.workload
        output = w.output_tokens.draw_int(self.rng)
        paste = self.rng.random() < w.paste.share
        appended = w.paste.tokens if paste else w.append_tokens.draw_int(self.rng)
        return output, paste, appended, w.think_time_s.draw(self.rng)

    async def append(self, count: Counter, answer: str, tool_calls: list[ToolCall],
                     tokens: int, paste: bool) -> None:
        """The assistant's answer as it came, then a tool result of exactly `tokens` tokens
        (a role "tool" reply when the assistant called a tool, else the harness's user turn
        carrying the output, as agent frameworks do)."""
        assistant = ChatMessage(role="assistant", content=answer, tool_calls=tool_calls) \
            if tool_calls else ChatMessage(role="assistant", content=answer)
        head = "Pasted file:\n" if paste else "Tool output:\n"
        text = await exact_text(count, tokens, head, seed=self.seed * 1000 + self.turn + 1)
        if tool_calls and tool_calls[0].id:
            result = ChatMessage(role="tool", tool_call_id=tool_calls[0].id, content=text)
        else:
            result = ChatMessage(role="user", content=text)
        self.messages = [*self.messages, assistant, result]
        self.turn += 1
        self.last_paste = paste
