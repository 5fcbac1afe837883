"""Where a field figure was measured: the stack (model, nodes and TP, engine build, image,
speculation, GMU, KV dtype) and the source (document and section).

A figure calibrates only the stack it was measured on. A recipe meets a stack when it serves
the same model on the same nodes and tensor parallelism with the same engine release
(major.minor); the image is recorded, not matched (recipes name their own images, the field
built its own). Anything sm121 takes from another stack is said as "assumed from <stack>"."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict


class Stack(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # short, for the words: "DS4 stack"
    model: str  # the model id as recipes name it (recipe.model.id)
    checkpoint: str  # the checkpoint as the source names it, with its size
    nodes: int
    tp: int
    engine: str  # the engine build, as the source gives it
    image: str
    speculation: str
    gmu: float | None  # None: the source does not say
    kv: str  # KV dtype / backend as the source gives it

    def describe(self) -> str:
        gmu = f"GMU {self.gmu:g}" if self.gmu is not None else "GMU not reported"
        return (f"{self.name}: {self.checkpoint}, {self.nodes} node(s) TP={self.tp}, vLLM "
                f"{self.engine} ({self.image}), {self.speculation}, {gmu}, KV {self.kv}")

    def serves(self, model: str, nodes: int, tp: int, engine: str | None) -> bool:
        """A recipe with these facts runs this stack."""
        return (model == self.model and nodes == self.nodes and tp == self.tp
                and release(engine) == release(self.engine))


class Source(BaseModel):
    model_config = ConfigDict(frozen=True)

    document: str
    section: str

    def describe(self) -> str:
        return f"{self.document}, {self.section}"


def release(version: str | None) -> str | None:
    """`0.21.1rc1.dev339 + DSpark overlay` -> `0.21`; None for an unversioned build."""
    match = re.match(r"\s*v?(\d+)\.(\d+)", version or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None
