"""The typer options several commands share, defined once so their help reads the same."""

from __future__ import annotations

import typer

from sm121.plan.render import DEFAULT_PORT

PROFILE = typer.Option(None, "--profile", "-p", help="Profile of the recipe (default: the "
                       "recipe's default_profile).")
CLUSTER = typer.Option(None, "--cluster", "-c", help="Cluster YAML: nodes, fabric, head.")
SET = typer.Option(None, "--set", help="Override an engine arg: --set max-num-seqs=4 "
                   "(repeatable). A flag outside the engine's allow-list (tuning flags with "
                   "typed values) needs --trust, on built-in recipes too.")
PORT = typer.Option(DEFAULT_PORT, "--port", help="API port of the engine.")
HOST = typer.Option("127.0.0.1", "--host", help="Address the engine listens on.")
TRUST = typer.Option(False, "--trust", help="Allow what a recipe that is not built in asks to "
                     "run or expose on every node (its own command, image, host mounts, loader "
                     "env, remote code, custom hooks), engine args outside the allow-list set on "
                     "top of any recipe (--set, a resumed tune's arms), or a cluster file's "
                     "programs and configs (a node's python, an ssh_config that runs commands, "
                     "a compile_cache outside ~/.cache); `sm121 plan` lists them.")
JSON = typer.Option(False, "--json", help="Print JSON.")
NODE_GIB = typer.Option(None, "--node-gib", help="Memory of one node in GiB (default: the "
                        "cluster file's memory_gib, else a GB10 node, 119.6 GiB).")
