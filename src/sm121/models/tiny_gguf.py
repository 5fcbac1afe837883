"""The tiny model as one GGUF file, for llama.cpp: the same weights, vocabulary and chat template
as the Hugging Face folder vLLM serves (models/tiny.py), so the two engines serve one model.

Written with ggml-org's `gguf` package from the folder's own files: the weights in F32 (the
folder's bf16 values, exactly), the byte-level BPE vocabulary and merges as llama.cpp's `gpt2`
tokenizer with the GPT-2 pre-tokenizer (what the folder's ByteLevel pre-tokenizer does), and
the Q and K projections permuted into the rotary layout llama.cpp's Llama graph expects (what
llama.cpp's own convert_hf_to_gguf.py does for a Llama)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sm121.errors import Sm121Error
from sm121.models.tiny import ARCHITECTURE, CHAT_TEMPLATE, SPECIAL_TOKENS

GGUF_NAME = "tiny.gguf"
# HF tensor names -> GGUF's (llama.cpp gguf-py constants.py, MODEL_ARCH.LLAMA).
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight":
        "output_norm.weight", "lm_head.weight": "output.weight"}
_LAYER = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight":
          "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
          "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight":
          "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
          "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
          "mlp.down_proj.weight": "ffn_down.weight"}


def write_tiny_gguf(folder: Path) -> Path:
    """`folder/tiny.gguf` from the tiny model in `folder` (written atomically; an existing one
    whose template is this version's is kept)."""
    target = folder / GGUF_NAME
    if target.is_file() and (folder / ".gguf-template").is_file() and (
            folder / ".gguf-template").read_text() == CHAT_TEMPLATE:
        return target
    try:
        import gguf
        import numpy as np
        from safetensors import safe_open
    except ImportError as exc:
        raise Sm121Error(f"writing the tiny model as GGUF needs {exc.name}",
                         "install the engine extra: pip install 'sm121[engine]'") from exc
    config = json.loads((folder / "config.json").read_text())
    fd, staging = tempfile.mkstemp(prefix=".tiny-", suffix=".gguf", dir=folder)
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(staging, "llama")
        _write_config(writer, config)
        _write_tokenizer(writer, folder)
        with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (safe_open is not a mapping)
                array = weights.get_tensor(name).float().numpy().astype(np.float32)
                writer.add_tensor(_gguf_name(name), _rotary(name, array, config))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(staging, target)
        (folder / ".gguf-template").write_text(CHAT_TEMPLATE)
    finally:
        Path(staging).unlink(missing_ok=True)
    return target


def _write_config(writer: Any, config: dict[str, Any]) -> None:
    import gguf

    writer.add_name("sm121 tiny")
    writer.add_context_length(ARCHITECTURE["max_position_embeddings"])
    writer.add_embedding_length(ARCHITECTURE["hidden_size"])
    writer.add_block_count(ARCHITECTURE["num_hidden_layers"])
    writer.add_feed_forward_length(ARCHITECTURE["intermediate_size"])
    writer.add_head_count(ARCHITECTURE["num_attention_heads"])
    writer.add_head_count_kv(ARCHITECTURE["num_key_value_heads"])
    writer.add_key_length(ARCHITECTURE["head_dim"])
    writer.add_value_length(ARCHITECTURE["head_dim"])
    writer.add_rope_dimension_count(ARCHITECTURE["head_dim"])
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    writer.add_rope_freq_base(float(config.get("rope_theta")
                                    or (config.get("rope_parameters") or {}).get("rope_theta")
                                    or 10000.0))
    writer.add_vocab_size(int(config["vocab_size"]))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def _write_tokenizer(writer: Any, folder: Path) -> None:
    import gguf

    data = json.loads((folder / "tokenizer.json").read_text())
    vocab: dict[str, int] = data["model"]["vocab"]
    for added in data.get("added_tokens", []):
        vocab.setdefault(added["content"], added["id"])
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    types = [gguf.TokenType.CONTROL if t in SPECIAL_TOKENS else gguf.TokenType.NORMAL
             for t in tokens]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_unk_token_id(vocab["<unk>"])
    writer.add_bos_token_id(vocab["<s>"])
    writer.add_eos_token_id(vocab["</s>"])
    writer.add_pad_token_id(vocab["</s>"])
    # The folder's tokenizer adds no BOS (no post-processor): neither does this one.
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)


def _gguf_name(name: str) -> str:
    if name in _TOP:
        return _TOP[name]
    parts = name.split(".")  # model.layers.N.rest
    if parts[:2] == ["model", "layers"] and ".".join(parts[3:]) in _LAYER:
        return f"blk.{parts[2]}.{_LAYER['.'.join(parts[3:])]}"
    raise Sm121Error(f"the tiny model has a tensor {name!r} this writer does not map",
                     "regenerate it: sm121 model tiny")


def _rotary(name: str, array: Any, config: dict[str, Any]) -> Any:
    """HF keeps Q and K in the half-split rotary layout; llama.cpp's Llama graph applies RoPE
    to interleaved pairs: permute each head's rows (convert_hf_to_gguf.py's LlamaModel)."""
    if name.endswith("q_proj.weight"):
        heads = int(config["num_attention_heads"])
    elif name.endswith("k_proj.weight"):
        heads = int(config["num_key_value_heads"])
    else:
        return array
    rows = array.shape[0]
    return (array.reshape(heads, 2, rows // heads // 2, *array.shape[1:])
            .swapaxes(1, 2).reshape(array.shape))
