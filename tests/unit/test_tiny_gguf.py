"""The tiny model as GGUF (llama.cpp's form) is the same model as the folder vLLM serves: the same
vocabulary in id order with its merges, the same chat template, and the same weights (Q and K
in llama.cpp's rotary layout, which undoes back to the folder's)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sm121.models.tiny import CHAT_TEMPLATE, generate_tiny_model
from sm121.models.tiny_gguf import write_tiny_gguf


def _unpermute(array: np.ndarray, heads: int) -> np.ndarray:
    rows = array.shape[0]
    return (array.reshape(heads, rows // heads // 2, 2, *array.shape[1:])
            .swapaxes(1, 2).reshape(array.shape))


def test_the_gguf_holds_the_folders_vocabulary_template_and_weights(tmp_path: Path) -> None:
    import gguf
    import torch
    from safetensors import safe_open

    folder = generate_tiny_model(tmp_path / "tiny")
    path = write_tiny_gguf(folder)
    reader = gguf.GGUFReader(str(path))
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode() for i in field.data]
    vocab = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
    assert tokens == [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    template = reader.fields["tokenizer.chat_template"]
    assert bytes(template.parts[template.data[0]]).decode() == CHAT_TEMPLATE
    tensors = {t.name: np.array(t.data) for t in reader.tensors}
    config = json.loads((folder / "config.json").read_text())
    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        q = weights.get_tensor("model.layers.0.self_attn.q_proj.weight").to(torch.float32).numpy()
        k = weights.get_tensor("model.layers.1.self_attn.k_proj.weight").to(torch.float32).numpy()
        embed = weights.get_tensor("model.embed_tokens.weight").to(torch.float32).numpy()
    assert np.array_equal(tensors["token_embd.weight"], embed)
    assert np.array_equal(_unpermute(tensors["blk.0.attn_q.weight"],
                                     config["num_attention_heads"]), q)
    assert np.array_equal(_unpermute(tensors["blk.1.attn_k.weight"],
                                     config["num_key_value_heads"]), k)
    assert write_tiny_gguf(folder) == path  # kept while its template is this version's
