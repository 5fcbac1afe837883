"""Random-weight Llama models of real shapes, generated locally (no downloads), for testbeds: the
weights are noise, the shapes (layers, heads, KV heads, head_dim, MLP) are a real model's, so
memory, KV pool, prefill and decode cost behave like that model's on the same engine.

The tokenizer is sm121's tiny byte-level BPE (models/tiny.py), so the vocabulary is small and
the parameter count is the transformer's alone (llama-8b: 7.0 B, 13 GiB in bf16). llama-8b is
the GPU testbed's model (docs/gpu-testbed.md): Llama-3-8B dimensions, seed 121.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sm121.errors import Sm121Error
from sm121.models.tiny import ARCHITECTURE as TINY_ARCHITECTURE
from sm121.models.tiny import MARKER as TINY_MARKER
from sm121.models.tiny import SEED, require_engine_libs, write_tokenizer

SHAPES: dict[str, dict[str, Any]] = {
    "tiny": dict(TINY_ARCHITECTURE),
    # Llama-3.2-1B dimensions.
    "llama-1b": {"hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 64, "num_hidden_layers": 16, "intermediate_size": 8192,
                 "max_position_embeddings": 131072, "rope_theta": 500000.0},
    # Llama-3-8B dimensions (the GPU testbed's make_model.py).
    "llama-8b": {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 128, "num_hidden_layers": 32, "intermediate_size": 14336,
                 "max_position_embeddings": 131072, "rope_theta": 500000.0},
}
MARKER = "sm121-random.json"


@dataclass(frozen=True)
class RandomModel:
    path: Path
    shape: str
    params_b: float
    device: str
    seconds: float
    reused: bool = False


def generate_random_model(shape: str, dest: Path, device: str = "auto",
                          force: bool = False, shard_size: str = "5GB") -> RandomModel:
    """Write a random-weight model of `shape` to `dest`, atomically (a failure leaves nothing
    half-written). A folder that already holds this shape is kept unless `force`."""
    if shape not in SHAPES:
        raise Sm121Error(f"unknown model shape {shape!r}", f"shapes: {', '.join(SHAPES)}")
    dest = dest.expanduser().resolve()
    if (existing := _existing(dest)) is not None and not force:
        if existing.get("shape") != shape:
            raise Sm121Error(f"{dest} holds a {existing.get('shape')} model, not {shape}",
                             "choose another folder, or pass --force to replace it")
        return RandomModel(dest, shape, float(existing["params_b"]), existing["device"], 0, True)
    if dest.exists() and existing is None and any(dest.iterdir()):
        raise Sm121Error(f"{dest} exists and is not a model sm121 generated",
                         "choose an empty or new folder")
    require_engine_libs()
    started = time.monotonic()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{shape}-", dir=dest.parent))
    try:
        write_tokenizer(staging)
        params, used = _write_weights(staging, shape, _device(device), shard_size)
        info = {"shape": shape, "seed": SEED, "params_b": round(params / 1e9, 4),
                "device": used, **SHAPES[shape]}
        (staging / MARKER).write_text(json.dumps(info, indent=2))
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return RandomModel(dest, shape, round(params / 1e9, 4), used,
                       round(time.monotonic() - started, 1))


def _existing(dest: Path) -> dict[str, Any] | None:
    marker = dest / MARKER
    if marker.is_file():
        data: dict[str, Any] = json.loads(marker.read_text())
        return data
    if (dest / TINY_MARKER).is_file():  # the embedded default's tiny model: the same shape
        return {"shape": "tiny", "params_b": 0.001, "device": "cpu"}
    return None


def _device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise Sm121Error("--device cuda, but torch sees no CUDA device", "use --device cpu")
    if requested not in ("cuda", "cpu"):
        raise Sm121Error(f"unknown device {requested!r}", "use auto, cuda or cpu")
    return requested


def _write_weights(folder: Path, shape: str, device: str,
                   shard_size: str = "5GB") -> tuple[int, str]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    config = LlamaConfig(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False,
                         **SHAPES[shape])
    config.dtype = "bfloat16"
    torch.manual_seed(SEED)
    # Built in bf16 on the target device: an 8B shape in fp32 on a CPU would need 28 GiB.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device), torch.no_grad():
            model = LlamaForCausalLM(config)  # type: ignore[call-arg]
            for parameter in model.parameters():
                parameter.normal_(0, 0.02)
    finally:
        torch.set_default_dtype(previous)
    model.save_pretrained(folder, safe_serialization=True, max_shard_size=shard_size)
    return sum(p.numel() for p in model.parameters()), device
