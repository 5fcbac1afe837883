"""The tiny model is generated locally, deterministically, with a chat template."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sm121.models.tiny import generate_tiny_model


def digest(folder: Path) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()
                          + (folder / "tokenizer.json").read_bytes()).hexdigest()


def test_same_seed_same_model(tmp_path: Path) -> None:
    first = generate_tiny_model(tmp_path / "a")
    second = generate_tiny_model(tmp_path / "b")
    assert digest(first) == digest(second)
    config = json.loads((first / "config.json").read_text())
    assert config["head_dim"] >= 32  # vLLM's CPU attention refuses smaller heads
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert not list(tmp_path.glob(".tiny-*")), "staging folders are cleaned up"


def test_chat_template_renders_messages(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(generate_tiny_model(tmp_path / "m"))
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == "<|user|>\nhi</s>\n<|assistant|>\n"


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_chat_template_is_hermes_style_with_tools(tmp_path: Path) -> None:
    """What vLLM's `hermes` tool parser reads back: <tool_call> JSON, tool results in
    <tool_response>; the system prompt joins the tools preamble."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(generate_tiny_model(tmp_path / "m"))
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=False,
                                         add_generation_prompt=True)
    assert text.startswith("<|system|>\nbe brief\n\nYou may call")
    assert '<tools>\n{"type": "function"' in text
    assert ('<|assistant|>\n<tool_call>\n{"name": "get_weather", "arguments": '
            '{"city": "Oslo"}}\n</tool_call></s>') in text
    assert "<|tool|>\n<tool_response>\nsunny\n</tool_response></s>" in text
    assert text.count("be brief") == 1 and text.endswith("<|assistant|>\n")


def test_an_older_model_gets_the_current_template(tmp_path: Path) -> None:
    from sm121.models.tiny import CHAT_TEMPLATE

    folder = generate_tiny_model(tmp_path / "m")
    weights = digest(folder)
    (folder / "chat_template.jinja").write_text("{{ messages }}")
    assert generate_tiny_model(folder) == folder
    assert (folder / "chat_template.jinja").read_text() == CHAT_TEMPLATE
    assert digest(folder) == weights
