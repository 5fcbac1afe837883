"""Every place a string can sit in a recipe or a cluster file, read off the pydantic schemas
themselves, so a field added to either schema joins the generated hostile corpus
(test_generated_corpus.py) without anyone listing it.

A location is a path of steps from the file's top level to one string: a field name, an index
into a list or tuple, the key of a mapping (`KEY`: the hostile string is the key itself), or
the value under a representative key. `document(location, value, base)` builds the smallest
file that holds `value` there: the required neighbours of each model on the way come from
SKELETONS, so the hostile string is the only thing wrong with the file."""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Union

from pydantic import BaseModel

KEY = "<key>"
# The representative key of each mapping, by the mapping's field name: one whose value the
# schema checks the way a stranger's would be (a safe engine flag, a family env name, ...).
REPRESENTATIVE_KEYS = {
    "args": "tool-call-parser",
    "env": "NCCL_DEBUG",
    "profiles": "p1",
    "custom": "myhook",
    "params": "repetition_penalty",
    "chat_template_kwargs": "thinking",
}
# The required fields of each model met on the way, with harmless values.
SKELETONS: dict[str, dict[str, Any]] = {
    "Recipe": {"name": "hostile", "model": {"id": "m", "source": "tiny"}},
    "ModelSpec": {"id": "m", "source": "tiny"},
    "Mount": {"host": "~/.cache/huggingface", "container": "/root/.cache/huggingface"},
    "ParamPolicy": {"action": "strip", "reason": "crashes"},
    "Profile": {"purpose": "p"},
    "Speculative": {"method": "mtp", "k": 1},
    "Node": {"name": "n1"},
}


@dataclass(frozen=True)
class Location:
    steps: tuple[str | int, ...]
    models: tuple[str, ...]  # the model class met at each step (for skeletons), "" for none

    @property
    def label(self) -> str:
        out = ""
        for step in self.steps:
            out += f"[{step}]" if isinstance(step, int) else ("." if out else "") + str(step)
        return out

    @property
    def field(self) -> str:
        """The last named field on the path: what a refusal must name."""
        names = [s for s in self.steps if isinstance(s, str) and s != KEY
                 and s not in REPRESENTATIVE_KEYS.values()]
        return names[-1]


def string_locations(model: type[BaseModel]) -> list[Location]:
    return list(_walk(model, (), (), "str"))


def number_locations(model: type[BaseModel]) -> list[Location]:
    """Every place a number (int or float, never bool) can sit: the numeric corpus's fields."""
    return list(_walk(model, (), (), "num"))


def _walk(model: type[BaseModel], steps: tuple[str | int, ...], models: tuple[str, ...],
          want: str) -> typing.Iterator[Location]:
    for name, info in model.model_fields.items():
        yield from _annotation(info.annotation, name, (*steps, name), (*models, model.__name__),
                               want)


def _annotation(annotation: Any, name: str, steps: tuple[str | int, ...], models: tuple[str, ...],
                want: str) -> typing.Iterator[Location]:
    for kind, inner in _kinds(annotation):
        if kind == want:
            yield Location(steps, models)
        elif kind == "model":
            yield from _walk(inner, steps, models, want)
        elif kind == "seq":
            yield from _annotation(inner, name, (*steps, 0), (*models, ""), want)
        elif kind == "map":
            key_type, value_type = inner
            if want == "str" and _admits_str(key_type):
                yield Location((*steps, KEY), (*models, ""))
            yield from _annotation(value_type, name, (*steps, REPRESENTATIVE_KEYS[name]),
                                   (*models, ""), want)


def _kinds(annotation: Any) -> typing.Iterator[tuple[str, Any]]:
    """What an annotation can hold, one entry per distinct shape (str, a model, a sequence of
    something, a mapping), looking through Annotated, unions and Optional."""
    seen: set[str] = set()
    for part in _flatten(annotation):
        origin = typing.get_origin(part)
        if part is str or origin is Literal or (isinstance(part, type) and issubclass(part, Enum)):
            kind, inner = "str", None
        elif isinstance(part, type) and issubclass(part, BaseModel):
            kind, inner = "model", part
        elif origin in (list, tuple):
            args = [a for a in typing.get_args(part) if a is not Ellipsis]
            kind, inner = "seq", args[0]
        elif origin is dict:
            kind, inner = "map", typing.get_args(part)
        elif part is int or part is float:
            kind, inner = "num", None
        else:
            continue  # bool, None: neither a string nor a number
        if kind not in seen:
            seen.add(kind)
            yield kind, inner


def _flatten(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _flatten(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [p for a in typing.get_args(annotation) for p in _flatten(a)]
    return [annotation]


def _admits_str(annotation: Any) -> bool:
    return any(kind == "str" for kind, _ in _kinds(annotation))


def document(location: Location, value: Any, base: dict[str, Any]) -> dict[str, Any]:
    """`base` with `value` at `location`, and each model on the way given its skeleton."""
    root = copy.deepcopy(base)
    node: Any = root
    for index, step in enumerate(location.steps):
        last = index == len(location.steps) - 1
        next_model = location.models[index + 1] if index + 1 < len(location.models) else ""
        if step == KEY:
            node[value] = _placeholder(location, index)
            return root
        if isinstance(step, int):
            while len(node) <= step:
                node.append({})
        if last:
            node[step] = value
            return root
        child = node[step] if (isinstance(step, int) or step in node) else None
        if not isinstance(child, dict | list):
            child = [] if isinstance(location.steps[index + 1], int) else {}
        if isinstance(child, dict):
            for key, default in SKELETONS.get(next_model, {}).items():
                child.setdefault(key, copy.deepcopy(default))
        node[step] = child
        node = child
    return root


def _placeholder(location: Location, index: int) -> Any:
    """A valid value for a mapping entry whose key is the hostile string."""
    mapping = location.steps[index - 1]
    return {"profiles": {"purpose": "p"}, "params": {"action": "strip", "reason": "r"}}.get(
        str(mapping), "1")
