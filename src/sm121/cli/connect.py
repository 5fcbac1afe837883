"""`sm121 connect RUN|URL --agent NAME`: the exact settings for one agent client."""

from __future__ import annotations

import os

import typer

from sm121.cli.options import JSON
from sm121.cli.output import console, print_json
from sm121.errors import Sm121Error
from sm121.gateway.connect import DEFAULT_KEY_ENV, Agent, choose_model, discover, settings, shell_lines


def register(app: typer.Typer) -> None:
    app.command("connect")(connect)


def connect(
    target: str = typer.Argument(..., help="A run id (or unique prefix; its gateway when it "
                                 "has one) or the endpoint's URL."),
    agent: Agent = typer.Option(..., "--agent", help="The client to configure."),
    model: str | None = typer.Option(None, "--model", help="A model the endpoint serves "
                                     "(default: the first it lists)."),
    key_env: str = typer.Option(DEFAULT_KEY_ENV, "--key-env", help="The variable that holds "
                                "the endpoint's API key, when it wants one (never printed)."),
    as_json: bool = JSON,
) -> None:
    """Print the settings (variables, config file, base URL, model name, key variable) that
    point AGENT at the endpoint, read from the running endpoint itself: Claude Code speaks
    Anthropic Messages, Codex the Responses API, OpenCode, aider and the OpenAI SDK chat
    completions."""
    if not key_env.isidentifier():
        raise Sm121Error(f"--key-env {key_env!r} is not a variable name", "e.g. SM121_API_KEY")
    url, note = _url_of(target)
    endpoint = discover(url, os.environ.get(key_env))
    chosen = settings(agent, endpoint, choose_model(endpoint, model), key_env)
    if note:
        chosen.notes.insert(0, note)
    if as_json:
        print_json(chosen.to_json())
        return
    console.print(f"# {agent.value} ({chosen.protocol}) -> {chosen.base_url}, model "
                  f"{chosen.model}", highlight=False, markup=False)
    for line in shell_lines(chosen):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for line in chosen.notes:
        console.print(f"# {line}", highlight=False, markup=False, soft_wrap=True)


def _url_of(target: str) -> tuple[str, str | None]:
    """A URL as given; a run's gateway, or its engine with a note that the gateway is where
    policy, lanes and metrics are."""
    if target.startswith(("http://", "https://")):
        return target, None
    from sm121.launch.control import resolve_run

    run = resolve_run(target)
    if run.gateway_url:
        return run.gateway_url, None
    return run.base_url, (f"run {run.run_id} has no gateway: these settings reach the engine "
                          "itself (serve --gateway, or sm121 gateway --runs, puts one in front)")
