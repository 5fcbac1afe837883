"""`sm121 recipes list|show|diff`."""

from __future__ import annotations

import typer
import yaml
from rich.table import Table
from rich.text import Text

from sm121.cli.output import console, print_json
from sm121.display import plain
from sm121.errors import Sm121Error
from sm121.plan.effective import profile_args
from sm121.recipes.loader import available_names, load_recipe

app = typer.Typer(help="List, show and compare serve recipes.", no_args_is_help=True)

JSON = typer.Option(False, "--json", help="Print JSON instead of a table.")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="recipes")


@app.command("list")
def list_recipes(as_json: bool = JSON) -> None:
    """List the recipes sm121 knows: built-in ones and those in $SM121_HOME/recipes."""
    recipes = [load_recipe(name).recipe for name in available_names()]
    if as_json:
        print_json([{"name": r.name, "engine": r.engine.kind.value, "runtime": r.runtime.kind,
                     "nodes": r.parallelism.nodes, "profiles": list(r.profiles),
                     "description": r.description} for r in recipes])
        return
    table = Table("recipe", "engine", "runtime", "nodes", "profiles", "description")
    for r in recipes:
        table.add_row(r.name, r.engine.kind.value, r.runtime.kind, str(r.parallelism.nodes),
                      ", ".join(r.profiles) or "-", r.description)
    console.print(table)


@app.command("show")
def show(name: str = typer.Argument(..., help="Recipe name or path to a .yaml file."),
         as_json: bool = JSON) -> None:
    """Print a recipe as loaded and validated (defaults filled in)."""
    loaded = load_recipe(name)
    data = loaded.recipe.model_dump(mode="json")
    if as_json:
        print_json(data)
        return
    console.print(plain(f"# {loaded.source}", style="dim"))
    console.print(yaml.safe_dump(data, sort_keys=False), highlight=False, markup=False)


@app.command("diff")
def diff(name: str = typer.Argument(..., help="Recipe name or path."),
         profiles: str = typer.Option(..., "--profiles", help="Comma-separated, e.g. agent,batch."),
         as_json: bool = JSON) -> None:
    """Compare the engine args of two or more profiles of one recipe, side by side."""
    recipe = load_recipe(name).recipe
    chosen = [p.strip() for p in profiles.split(",") if p.strip()]
    missing = [p for p in chosen if p not in recipe.profiles]
    if len(chosen) < 2 or missing:
        raise Sm121Error("--profiles needs two or more of this recipe's profiles"
                         + (f"; unknown: {', '.join(missing)}" if missing else ""),
                         f"profiles of {recipe.name}: {', '.join(recipe.profiles) or '(none)'}")
    args = {p: profile_args(recipe, p) for p in chosen}
    keys = sorted(set().union(*(a.keys() for a in args.values())))
    rows = [{"arg": k, **{p: args[p].get(k) for p in chosen},
             "differs": len({repr(args[p].get(k)) for p in chosen}) > 1} for k in keys]
    if as_json:
        print_json({"recipe": recipe.name, "profiles": {p: recipe.profiles[p].purpose for p in chosen},
                    "args": rows})
        return
    table = Table("arg", *chosen, title=f"{recipe.name}: " + " vs ".join(chosen))
    for row in rows:
        style = "bold yellow" if row["differs"] else ""
        table.add_row(str(row["arg"]), *(str(row[p]) for p in chosen), style=style)
    console.print(table)
    for p in chosen:
        console.print(Text.assemble(plain(p, style="bold"), ": ",
                                    plain(recipe.profiles[p].purpose)))
