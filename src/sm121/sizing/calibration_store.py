"""The calibration store: observed boots kept per recipe and profile under
$SM121_HOME/calibration/<recipe>/<profile>.json, read and written here so memory/ keeps
only the Observation model and the math on it."""

from __future__ import annotations

import json
from pathlib import Path

from sm121 import paths
from sm121.errors import Sm121Error, shorten_words
from sm121.memory.calibration import Observation
from sm121.memory.field import builtin_observations
from sm121.recipes.schema import Recipe


def store_dir() -> Path:
    return paths.home() / "calibration"


def _file(recipe: str, profile: str | None) -> Path:
    return store_dir() / recipe / f"{profile or 'default'}.json"


def load_observations(recipe: Recipe | str, profile: str | None = None) -> list[Observation]:
    """Stored observations for the recipe (one profile, or all), then the field's built-in
    ones measured on the stack this recipe serves (same model, nodes, TP and engine release):
    a figure calibrates only the stack it was measured on. Given only a name, the built-in
    ones are those recorded for the built-in recipe of that name."""
    name = recipe if isinstance(recipe, str) else recipe.name
    stored = load_stored(name, profile)
    builtin = [o for o in builtin_observations()
               if (o.recipe == name if isinstance(recipe, str) else _serves(o, recipe))
               and (profile is None or o.profile == profile)]
    return stored + builtin


def _serves(observation: Observation, recipe: Recipe) -> bool:
    par = recipe.parallelism
    return observation.stack is not None and observation.stack.serves(
        recipe.model.id, par.nodes, par.tp, recipe.engine.version)


def load_stored(name: str, profile: str | None = None) -> list[Observation]:
    """The observations calibrated from runs of the recipe of this name."""
    files = ([_file(name, profile)] if profile is not None
             else sorted((store_dir() / name).glob("*.json")))
    return [o for f in files if f.is_file() for o in _read(f)]


def _read(file: Path) -> list[Observation]:
    """A calibration file, checked against its model: it steers the memory plan (the GMU
    sm121 suggests), and anyone may have copied it here; a bad one is named, not a traceback."""
    try:
        data = json.loads(file.read_text(), parse_constant=_no_constant)
        if not isinstance(data, list):
            raise ValueError("not a JSON list of observations")
        return [Observation.model_validate(item) for item in data]
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise Sm121Error(f"calibration file {file} is not readable: "
                         f"{shorten_words(str(exc))}",
                         "delete it (sm121 writes it again after the next boot)") from exc


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number sm121 reads")


def save_observation(observation: Observation) -> Path:
    file = _file(observation.recipe, observation.profile)
    file.parent.mkdir(parents=True, exist_ok=True)
    existing = _read(file) if file.is_file() else []
    kept = [o for o in existing if o.source != observation.source] + [observation]
    file.write_text(json.dumps([o.model_dump(mode="json") for o in kept], indent=2))
    return file
