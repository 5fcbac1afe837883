"""The effective profile: the one place that answers "what are this recipe + profile +
overrides' engine args and env". The plan, the memory planner, the doctor and validation all
read it, so an arg means the same thing everywhere it is looked at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sm121.errors import Sm121Error
from sm121.recipes.schema import ArgValue, Recipe, normalize_args


@dataclass(frozen=True)
class EffectiveProfile:
    recipe: Recipe
    profile: str | None
    args: dict[str, ArgValue]  # recipe args, the profile's on top, then the overrides
    env: dict[str, str]  # recipe env, the profile's on top, then the caller's extra env
    overrides: dict[str, ArgValue] = field(default_factory=dict)

    @property
    def purpose(self) -> str:
        return self.recipe.profiles[self.profile].purpose if self.profile else self.recipe.description


def resolve_profile(recipe: Recipe, profile: str | None, source: str) -> str | None:
    """The profile asked for, else the recipe's default; an unknown name is an error."""
    chosen = profile or recipe.default_profile
    if chosen is None and recipe.profiles:
        raise Sm121Error(f"recipe {recipe.name} needs a profile",
                         f"add --profile with one of: {', '.join(recipe.profiles)}")
    if chosen is not None and chosen not in recipe.profiles:
        raise Sm121Error(f"{source}: no profile {chosen!r} in recipe {recipe.name}",
                         f"profiles: {', '.join(recipe.profiles) or '(none)'}")
    return chosen


def profile_args(recipe: Recipe, profile: str | None) -> dict[str, ArgValue]:
    """Recipe args with the profile's on top (no overrides): what a profile itself says."""
    args = dict(recipe.args)
    if profile is not None:
        args.update(recipe.profiles[profile].args)
    return args


def profile_env(recipe: Recipe, profile: str | None) -> dict[str, str]:
    return dict(recipe.env) | (dict(recipe.profiles[profile].env) if profile else {})


def effective_profile(recipe: Recipe, profile: str | None, source: str,
                      overrides: Mapping[str, ArgValue] | None = None,
                      env: Mapping[str, str] | None = None) -> EffectiveProfile:
    chosen = resolve_profile(recipe, profile, source)
    try:  # one spelling per flag, as a recipe's own args (a resume file's may differ)
        extra = normalize_args(overrides or {})
    except ValueError as exc:
        raise Sm121Error(f"--set: {exc}", "set each engine arg once") from exc
    return EffectiveProfile(
        recipe=recipe, profile=chosen,
        args=profile_args(recipe, chosen) | extra,
        env=profile_env(recipe, chosen) | dict(env or {}),
        overrides=extra,
    )
