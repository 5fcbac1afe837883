"""`sm121 connect RUN|URL --agent NAME`: the exact settings for one agent client."""

from __future__ import annotations

import os
import shlex

import typer

from sm121.cli.options import JSON
from sm121.cli.output import console, print_json
from sm121.connect.agents import Agent, ClientSettings, settings
from sm121.connect.endpoint import DEFAULT_KEY_ENV, choose_model, discover, endpoint_url, looks_like_url
from sm121.connect.probe import ProbeResult, run_probes
from sm121.connect.render import blocks, checked, quoted, shell_lines, to_json
from sm121.errors import Sm121Error


def register(app: typer.Typer) -> None:
    app.command("connect")(connect)


def connect(
    target: str = typer.Argument(..., help="A run id (or unique prefix; its gateway when it "
                                 "has one) or the endpoint's URL (http://HOST:PORT, or "
                                 "HOST:PORT)."),
    agent: Agent = typer.Option(..., "--agent", help="The client to configure."),
    model: str | None = typer.Option(None, "--model", help="A model the endpoint serves "
                                     "(default: the first it lists)."),
    key_env: str = typer.Option(DEFAULT_KEY_ENV, "--key-env", help="The variable that holds "
                                "the endpoint's API key, when it wants one (never printed)."),
    shell: bool = typer.Option(False, "--shell", help="Print only the shell lines, for "
                               "eval \"$(sm121 connect ... --shell)\"."),
    write: bool = typer.Option(False, "--write", help="Merge sm121's keys into the agent's "
                               "config file (a named provider/profile where the agent has "
                               "them), keep a backup, and print what changed."),
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Send one tiny request "
                               "(max_tokens 1) on each route the agent will call."),
    as_json: bool = JSON,
) -> None:
    """Print the settings (variables, config fragments, limits, command) that point AGENT at
    the endpoint, read from the running endpoint itself: its model, its context window (handed
    to the agent with an output limit and the prompt size to compact at), and whether it
    wants a key. Claude Code speaks Anthropic Messages, Codex the Responses API, OpenCode,
    aider and the OpenAI SDK chat completions; each route is probed before it is handed over."""
    try:
        _connect(target, agent, model, key_env, shell, write, probe, as_json)
    except Sm121Error as exc:
        if not as_json:
            raise
        print_json({"error": {"message": exc.message, "hint": exc.hint}})
        raise typer.Exit(2) from exc


def _connect(target: str, agent: Agent, model: str | None, key_env: str, shell: bool,
             write: bool, probe: bool, as_json: bool) -> None:
    if not key_env.isidentifier() or not key_env.isascii():
        raise Sm121Error(f"--key-env {key_env!r} is not a variable name", "e.g. SM121_API_KEY")
    url, note, unreachable = _url_of(target)
    key = os.environ.get(key_env)
    endpoint = discover(url, key, key_env, unreachable_hint=unreachable)
    chosen = settings(agent, endpoint, choose_model(endpoint, model))
    if note:
        chosen.notes.insert(0, note)
    results = run_probes(endpoint.url, key, agent, chosen.model) if probe else []
    _refuse_failed(results, agent, endpoint.url)
    form = shlex.join(["sm121", "connect", target, "--agent", agent.value, *(
        ["--model", chosen.model] if model else []), *(
        ["--key-env", key_env] if key_env != DEFAULT_KEY_ENV else []), "--shell"])
    if write:
        _write(chosen, as_json, [r.to_json() for r in results], form)
        return
    _refuse_file_credentials(chosen, form)
    if as_json:
        print_json(to_json(chosen, [r.to_json() for r in results]))
        return
    lines = shell_lines(chosen) if shell else blocks(chosen, form)
    if results and not shell:
        lines += ["", "# --- probe (one request, max_tokens 1)",
                  *checked([f"# {quoted(r.path)}: {r.detail}" for r in results])]
    for line in lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _refuse_file_credentials(chosen: ClientSettings, form: str) -> None:
    """The shell lines cannot undo a key in the agent's own settings file (its env overrides
    the shell's): printing them as if they could would send that key to the endpoint."""
    from sm121.connect.write import credentials_in

    for edit in chosen.edits:
        found = credentials_in(edit)
        if found:
            raise Sm121Error(
                f"{edit.path} holds {', '.join(found)}: {chosen.agent} would send that "
                f"credential to {chosen.base_url}, whatever the shell says (the file "
                "overrides the shell)",
                f"`{form.removesuffix(' --shell')} --write` removes them (a backup of the "
                "file is kept), or remove them by hand")


def _refuse_failed(results: list[ProbeResult], agent: Agent, url: str) -> None:
    failed = [r for r in results if not r.ok]
    if failed:
        raise Sm121Error(
            f"{url} does not serve what {agent.value} calls: "
            + "; ".join(f"{r.path} {r.detail}" for r in failed),
            "an sm121 gateway in front of vLLM serves every route; an engine without the route "
            "cannot drive this agent (`--no-probe` prints the settings anyway)")


def _write(chosen: ClientSettings, as_json: bool, probes: list[dict[str, object]],
           form: str) -> None:
    from sm121.connect.write import apply

    if not chosen.edits:
        raise Sm121Error(f"{chosen.agent} has no config file sm121 writes",
                         "use the shell lines: sm121 connect ... --shell")
    written = [apply(edit) for edit in chosen.edits]
    if as_json:
        print_json({**to_json(chosen, probes), "written": [
            {"path": str(w.path), "backup": str(w.backup) if w.backup else None,
             "changes": w.changes} for w in written]})
        return
    out = []
    for w in written:
        out.append(f"# {quoted(w.path)}: " + (f"backup {quoted(w.backup)}" if w.backup else
                                              "new file" if w.changed else "unchanged"))
        out += [f"#   {change}" for change in w.changes]
    in_files = {keys[-1] for e in chosen.edits for keys, _ in e.entries if keys[0] == "env"}
    if chosen.env_from or chosen.unset or set(chosen.env) - in_files:
        out.append(f"# the shell still needs: eval \"$({form})\"")
    out.append(f"# then run: {chosen.command_line()}")
    for line in checked(out):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _url_of(target: str) -> tuple[str, str | None, str]:
    """The endpoint's URL, a note for the settings, and the hint for when it does not answer.
    A URL (or HOST:PORT) as given; a run's gateway, or its engine with a note that the gateway
    is where policy, lanes and metrics are. A stopped or failed run is refused as such."""
    if looks_like_url(target):
        return endpoint_url(target), None, ("is the gateway or engine running there? check the "
                                            "URL (`sm121 status` lists the runs)")
    from sm121.launch.control import resolve_run

    run = resolve_run(target)
    if run.status in ("stopped", "failed"):
        raise Sm121Error(f"run {run.run_id} is {run.status}: there is no endpoint to connect to",
                         "start one (sm121 serve RECIPE --profile P --gateway), or pick a live "
                         "run from `sm121 status`")
    unreachable = (f"run {run.run_id} is marked {run.status}, but its endpoint does not answer: "
                   f"it may have exited (sm121 status; sm121 logs {run.run_id})")
    if run.gateway_url:
        return endpoint_url(run.gateway_url), None, unreachable
    return endpoint_url(run.base_url), (
        f"run {run.run_id} has no gateway: these settings reach the engine itself "
        "(serve --gateway, or sm121 gateway --runs, puts one in front)"), unreachable
