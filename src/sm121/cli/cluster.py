"""`sm121 cluster check FILE`: is every node ready to take part in a serve?"""

from __future__ import annotations

import dataclasses

import typer
from rich.table import Table

from sm121.cli.options import TRUST
from sm121.cli.output import console, print_json
from sm121.cluster.spec import load_cluster
from sm121.cluster.trust import cluster_needs, require_cluster_trust
from sm121.doctor.cluster_check import CheckRequest, check_cluster
from sm121.engines.registry import adapter_for
from sm121.errors import Sm121Error
from sm121.recipes.loader import load_recipe

app = typer.Typer(help="Cluster files: check the nodes before a serve.", no_args_is_help=True)
STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red"}


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="cluster")


@app.command("check")
def check(
    file: str = typer.Argument(..., help="Cluster YAML."),
    recipe: str | None = typer.Option(None, "--recipe", "-r", help="Check for this recipe: its "
                                      "runtime, and for docker that its image is identical on "
                                      "every node."),
    port: int = typer.Option(8000, "--port", help="API port that must be free on the nodes."),
    trust: bool = TRUST,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """SSH reachability, the runtime (docker or python), the interfaces and HCAs of the file,
    the image id on all nodes, free ports and clock skew. Exits 2 when a check fails."""
    cluster, source = load_cluster(file)
    # The checks run each node's python and reach it through the ssh_config: the file's own
    # programs, refused without --trust before the first ssh.
    require_cluster_trust(source, cluster_needs(cluster), trust)
    request = CheckRequest(cluster=cluster, source=source, ports=(port,))
    if recipe:
        loaded = load_recipe(recipe)
        runtime = loaded.recipe.runtime
        engine = adapter_for(loaded.recipe.engine.kind)  # a recipe meets its engine: no plan here
        ports = (port, *engine.rendezvous_ports(runtime.kind))
        request = dataclasses.replace(request, runtime=runtime.kind, image=runtime.image,
                                      ports=ports, recipe=loaded.recipe, recipe_name=recipe)
    results = check_cluster(request)
    if as_json:
        print_json([dataclasses.asdict(r) for r in results])
    else:
        table = Table("node", "check", "status", "detail")
        for r in results:
            detail = r.detail + (f"\nfix: {r.fix}" if r.fix and r.status != "ok" else "")
            table.add_row(r.node, r.check, f"[{STYLE[r.status]}]{r.status}[/]", detail)
        console.print(table)
    failed = [r for r in results if r.status == "error"]
    if failed:
        raise Sm121Error(f"{len(failed)} check(s) failed on {source}",
                         "fix them, then run `sm121 cluster check` again")
