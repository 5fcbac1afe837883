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


def _tiny_cli(folder: Path) -> tuple[int, str]:
    from typer.testing import CliRunner

    from sm121.cli.main import app

    result = CliRunner().invoke(app, ["model", "tiny", str(folder)])
    return result.exit_code, f"{result.output}{result.exception or ''}"


def test_model_tiny_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    """Neither emptied nor edited: a folder of someone's files, or a real model (whose
    config.json once made `model tiny` rewrite its chat template)."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("mine")
    model = tmp_path / "real-model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    config = json.dumps({"chat_template": "{{ messages }}"})
    (model / "tokenizer_config.json").write_text(config)
    (model / "chat_template.jinja").write_text("{{ messages }}")
    for folder in (files, model):
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        code, said = _tiny_cli(folder)
        assert code != 0 and "is not a tiny model sm121 generated" in said, said
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    code, said = _tiny_cli(files / "notes.txt")  # a file is not a folder to fill either
    assert code != 0 and "is not a tiny model sm121 generated" in said
