"""`sm121 engine flags`: read the flag list from the engine that will run and cache it, so recipe
checks use that engine's own flags instead of a bundled list."""

from __future__ import annotations

import typer

from sm121.cli.options import CLUSTER, JSON, PROFILE, TRUST
from sm121.cli.output import console, err_console, print_json
from sm121.cluster.spec import load_cluster
from sm121.hosts.transport import transport_for
from sm121.launch.engine_flags import read_engine_flags
from sm121.plan.render import PlanRequest, render_plan
from sm121.plan.trust import require_trust
from sm121.recipes.loader import load_recipe

app = typer.Typer(help="What the engine that will run accepts.", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="engine")


@app.command("flags")
def flags(
    name: str = typer.Argument(..., help="Recipe name or path to a .yaml file."),
    profile: str | None = PROFILE,
    cluster: str | None = CLUSTER,
    as_json: bool = JSON,
    trust: bool = TRUST,
) -> None:
    """Run the engine's `--help=all` on the head node (the native command, or `docker run --rm`
    of the recipe's image) and cache its flags under $SM121_HOME/engine-flags/ per vLLM version
    and image id. Later checks of this recipe use them; a version that differs from the
    recipe's engine.version is named. It runs the recipe's command or image: a recipe that is
    not built in gets the same trust check as `serve`, and its list serves only itself."""
    loaded = load_recipe(name)  # once: the plan checked is the recipe whose command runs
    plan = render_plan(PlanRequest(recipe=loaded, profile=profile,
                                   cluster=load_cluster(cluster) if cluster else None))
    require_trust(plan.recipe, plan.needs_trust, trust)
    head = plan.head
    transport = transport_for(head.ssh, head.ssh_port, head.ssh_config, head.name)
    err_console.print(f"reading the flags of {name}'s engine on {head.name} ...", style="dim")
    read = read_engine_flags(loaded.recipe, transport, head.name, builtin=loaded.builtin)
    diff = read.against_bundled()
    if as_json:
        print_json({"version": read.version, "engine_id": read.engine_id, "image": read.image,
                    "how": read.how, "flags": len(read.flags), "cache_file": read.cache_file,
                    "mismatch": read.mismatch,
                    "vs_bundled": None if diff is None else
                    {"only_engine": sorted(diff[1]), "only_bundled": sorted(diff[2])}})
        return
    console.print(f"{read.engine.label} {read.version}: {len(read.flags)} flags from {read.how}\n"
                  f"cached: {read.cache_file}")
    if read.mismatch:
        console.print(f"[yellow]warning:[/] {read.mismatch}; recipe checks now use "
                      f"{read.version}'s list", highlight=False)
    if diff is None:
        console.print(f"no bundled list for {read.version} (bundled: "
                      f"{', '.join(read.engine.bundled_versions())})")
    else:
        console.print(f"against the bundled {diff[0]} list: {len(diff[1])} only in the engine "
                      f"{sorted(diff[1])[:8]}, {len(diff[2])} only in the list {sorted(diff[2])[:8]}")
