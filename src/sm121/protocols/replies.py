"""The unstreamed replies of chat completions, Anthropic Messages and the Responses API, as
models of the fields a client reads: text, tool calls (in each protocol's own form), stop or
finish reason, usage. Every model keeps the keys it does not name, so a reply read here and
dumped again (`echoed`: the next turn sends an assistant turn back as it came) is the reply
the server gave. Shown in text (`str`), a model reads as the JSON it came from."""

from __future__ import annotations

from typing import Any

from pydantic import Field, JsonValue

from sm121.open_model import Open


class ReplyPart(Open):
    """A part of a reply: unknown keys kept, printed as its JSON (a case's reason quotes it)."""

    def echoed(self) -> dict[str, Any]:
        """The part as it came, to send back on the next turn."""
        return self.model_dump(exclude_unset=True)

    def __str__(self) -> str:
        return str(self.echoed())


class PromptTokensDetails(ReplyPart):
    cached_tokens: int | None = None  # prefix-cache hits, when the engine reports them


class Usage(ReplyPart):
    """Token counts under any protocol's names (protocols/usage.py reads them together)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptTokensDetails | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class FunctionCall(ReplyPart):
    name: str | None = None
    arguments: Any = None  # a JSON string by the protocol; what came is checked, not assumed


class ToolCall(ReplyPart):
    """A tool call in chat's form; Messages' tool_use blocks and Responses' function_call
    items are read into it (protocols/assembly.py) so one check serves all three."""

    id: str | None = None
    type: str = "function"
    function: FunctionCall = Field(default_factory=FunctionCall)


class ChatMessage(ReplyPart):
    """A chat message, a reply's or a turn of a conversation being sent: role, content (text,
    or a list of parts as a captured message may carry), the assistant's tool calls, a tool
    result's call id. Only the keys set are written, so a message goes on the wire exactly
    as it was made or captured."""

    role: str | None = None
    content: str | list[JsonValue] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None  # vLLM's older name

    @property
    def calls(self) -> list[ToolCall]:
        return list(self.tool_calls or [])

    @property
    def text(self) -> str:
        """The content as one string (a list of parts as its JSON-ish text)."""
        return str(self.content or "")


class ChatChoice(ReplyPart):
    message: ChatMessage = Field(default_factory=ChatMessage)
    finish_reason: str | None = None


class ChatCompletion(ReplyPart):
    choices: list[ChatChoice] = Field(default_factory=list)
    usage: Usage | None = None


class ContentBlock(ReplyPart):
    """A Messages content block: text, or a tool_use with its parsed input."""

    type: str | None = None
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class AnthropicMessage(ReplyPart):
    type: str | None = None
    role: str | None = None
    content: list[ContentBlock] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: Usage | None = None

    def text(self) -> str:
        return "".join(b.text or "" for b in self.content if b.type == "text")


class OutputContent(ReplyPart):
    type: str | None = None
    text: str | None = None


class OutputItem(ReplyPart):
    """A Responses output item: a message (its content), or a function_call."""

    type: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: Any = None
    content: list[OutputContent] | None = None


class IncompleteDetails(ReplyPart):
    reason: str | None = None


class ResponseObject(ReplyPart):
    object: str | None = None
    status: str | None = None
    output: list[OutputItem] = Field(default_factory=list)
    usage: Usage | None = None
    incomplete_details: IncompleteDetails | None = None

    def texts(self) -> list[str]:
        """The text of every message item's content, in order."""
        return [c.text or "" for item in self.output if item.type == "message"
                for c in item.content or []]
