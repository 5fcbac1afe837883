"""Find and load recipes: built-in ones, the user's own, or a YAML file given by path."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import Node

from sm121 import paths
from sm121.display import escape
from sm121.errors import Sm121Error
from sm121.names import NAME_PATTERN, NAME_RULE
from sm121.recipes.schema import Recipe

M = TypeVar("M", bound=BaseModel)
BUILTIN_PREFIX = "builtin:"
# The largest recipe or cluster file read (the built-in recipes are under 10 KB).
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class LoadedRecipe:
    recipe: Recipe
    source: str  # file name shown in errors
    # Shipped with sm121 (trusted). Set by the loader alone, never read from a name: a file
    # may be called `builtin:x.yaml`.
    builtin: bool = False


def user_recipes_dir() -> Path:
    return paths.home() / "recipes"


def builtin_names() -> list[str]:
    folder = resources.files("sm121.recipes").joinpath("builtin")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def available_names() -> list[str]:
    user = sorted(p.stem for p in user_recipes_dir().glob("*.yaml")) if user_recipes_dir().is_dir() else []
    return sorted(set(builtin_names()) | set(user))


def load_recipe(name_or_path: str) -> LoadedRecipe:
    """A path (anything ending in .yaml/.yml) or a name: the user's recipe, then a built-in."""
    if name_or_path.endswith((".yaml", ".yml")):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise Sm121Error(f"recipe file {path} does not exist", "check the path")
        return _parse(read_text(path, str(path)), str(path))
    if not NAME_PATTERN.fullmatch(name_or_path):
        raise Sm121Error(f"{name_or_path!r} is neither a recipe name nor a .yaml file",
                         f"a recipe name has {NAME_RULE}; a path ends in .yaml")
    user_file = user_recipes_dir() / f"{name_or_path}.yaml"
    if user_file.is_file():
        return _parse(read_text(user_file, str(user_file)), str(user_file))
    builtin = resources.files("sm121.recipes").joinpath(f"builtin/{name_or_path}.yaml")
    if builtin.is_file():
        loaded = _parse(builtin.read_text(), f"{BUILTIN_PREFIX}{name_or_path}.yaml")
        return LoadedRecipe(loaded.recipe, loaded.source, builtin=True)
    raise Sm121Error(
        f"no recipe named {name_or_path!r}",
        f"known recipes: {', '.join(available_names())} (or give a path to a .yaml file)",
    )


def _parse(text: str, source: str) -> LoadedRecipe:
    data = parse_yaml(text, source)
    return LoadedRecipe(validate_model(Recipe, data, source), source)


def read_text(path: Path, source: str) -> str:
    """A recipe or cluster file's text. Such files come from strangers: one over
    MAX_FILE_BYTES is refused unread, and bytes that are not UTF-8 are refused by name (file
    and offset), not left to a UnicodeDecodeError."""
    with path.open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Sm121Error(f"{source}: over {MAX_FILE_BYTES // (1 << 20)} MB (the largest "
                         "recipe or cluster file sm121 reads; real ones are a few KB)",
                         "pass the recipe or cluster file itself")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Sm121Error(f"{source}: not UTF-8 text (byte {exc.start} is "
                         f"{data[exc.start:exc.start + 1]!r})",
                         "save the file as UTF-8") from exc


class StrangerLoader(yaml.SafeLoader):
    """PyYAML's safe loader without what a recipe never needs and a stranger abuses:
    aliases (`*name`: a 600-byte alias bomb took 69 s and 700 MB, then printed 80 MB), and
    duplicate keys (the later one silently won: an error naming both, by line)."""

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"found the alias *{event.anchor}: sm121 reads no YAML aliases "
                "(write the value out)", event.start_mark)
        return super().compose_node(parent, index)  # type: ignore[no-any-return]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        first: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            try:
                seen = key in first
            except TypeError:  # unhashable: the base class refuses it with its own message
                continue
            if seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found the key {key!r} twice (first on line {first[key].line + 1}): "
                    "each key once", key_node.start_mark)
            first[key] = key_node.start_mark
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """YAML read as sm121 reads every file a stranger may write (StrangerLoader)."""
    return yaml.load(text, Loader=StrangerLoader)  # noqa: S506 - a SafeLoader subclass


def parse_yaml(text: str, source: str) -> Any:
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise Sm121Error(f"{source}: not valid YAML: {exc}", "fix the YAML syntax") from exc
    if not isinstance(data, dict):
        raise Sm121Error(f"{source}: expected a mapping at the top level", "see the built-in recipes")
    return data


def validate_model(model: type[M], data: Any, source: str) -> M:
    """Pydantic errors rewritten to name the file, the field and what is allowed."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"  {source}: {_field(err)}: {_describe(model, err)}" for err in exc.errors()]
        raise Sm121Error(
            f"{source} is not valid:\n" + "\n".join(lines),
            "fix the fields named above",
        ) from exc


def _field(err: Any) -> str:
    """Where in the file, as a dotted path; a mapping's keys are the file's (a profile's name,
    an arg's), so each part is spelled out and bounded. A key its own validator refused is
    named by that error, so the path stops at its mapping (`profiles`, not
    `profiles.NAME.[key]`)."""
    loc = err["loc"][:-2] if _refused_key(err) else err["loc"]
    return ".".join(escape(str(part), 120) for part in loc) or "(top level)"


def _refused_key(err: Any) -> bool:
    """A mapping's key refused by its type's validator (names.check_profile_name, ...), whose
    message names the key, spelled out, and the rule."""
    return bool(err["loc"]) and err["loc"][-1] == "[key]" and err["type"] == "value_error"


def _describe(model: type[BaseModel], err: Any) -> str:
    if _refused_key(err):
        return str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, err["loc"][:-1])
        return f"unknown field (allowed: {', '.join(allowed)})" if allowed else "unknown field"
    if err["type"] in {"literal_error", "enum"}:
        return f"{err['msg']}"
    if err["type"] == "finite_number":  # named: NaN and infinity read as numbers in YAML
        return f"NaN and infinity are refused: a finite number (got {err.get('input')!r})"
    return f"{err['msg']} (got {err.get('input')!r})"


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Walk the schema along `loc` to list the fields allowed where an unknown one appeared."""
    current: Any = model
    for part in loc:
        if not isinstance(part, str):  # a list index: stay on the element type
            continue
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return []
        annotation = fields[part].annotation
        current = next((a for a in getattr(annotation, "__args__", (annotation,))
                        if isinstance(a, type) and issubclass(a, BaseModel)), annotation)
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else []
