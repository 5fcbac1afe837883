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
