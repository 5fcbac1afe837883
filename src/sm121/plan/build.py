"""Build a ServePlan from names and files: load the recipe and the cluster, then render.

The commands (plan, serve, gateway) and the A/B all start here; overrides arrive parsed."""

from __future__ import annotations

from collections.abc import Mapping

from sm121.cluster.spec import load_cluster
from sm121.plan.model import ServePlan
from sm121.plan.render import DEFAULT_PORT, PlanRequest, render_plan
from sm121.plan.trust import require_trust
from sm121.recipes.loader import load_recipe
from sm121.recipes.schema import ArgValue


def build_plan(name: str, profile: str | None = None, cluster: str | None = None,
               overrides: Mapping[str, ArgValue] | None = None, port: int = DEFAULT_PORT,
               host: str = "127.0.0.1", argv_check: bool = True) -> ServePlan:
    """`name` is a recipe name or a path to a .yaml file; `cluster` a cluster file's path."""
    return render_plan(PlanRequest(
        recipe=load_recipe(name),
        profile=profile,
        cluster=load_cluster(cluster) if cluster else None,
        overrides=dict(overrides or {}),
        port=port,
        host=host,
        argv_check=argv_check,
    ))


def require_arms_trust(name: str, arms: Mapping[str, tuple[str | None, Mapping[str, ArgValue]]],
                       trust: bool) -> None:
    """Engine args read back from a file before anything boots (a resumed tune's arms, each
    a profile and the args on top of it): each arm rendered as its boot renders it, and
    refused without --trust as `--set` of the same args would be, built-in recipe or not.
    The boots check again (render_plan); this refuses before the first one."""
    if trust:
        return
    loaded = load_recipe(name)
    for arm, (profile, args) in arms.items():
        plan = render_plan(PlanRequest(recipe=loaded, profile=profile, overrides=dict(args)))
        require_trust(f"{plan.recipe} (arm {arm!r}, read back from disk)", plan.needs_trust,
                      trust)
