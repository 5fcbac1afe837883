"""`sm121 model tiny|random`: models sm121 makes itself, with no downloads: the embedded
default's tiny model, or a random-weight model of a real shape."""

from __future__ import annotations

from pathlib import Path

import typer

from sm121 import paths
from sm121.cli.options import JSON
from sm121.cli.output import console, print_json
from sm121.models.random_model import SHAPES, generate_random_model

app = typer.Typer(help="Models sm121 makes itself (no downloads).", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="model")


@app.command("tiny")
def model_tiny(directory: Path = typer.Argument(..., help="Where to write the model.")) -> None:
    """Generate the tiny random-weight Llama (tokenizer with chat template, weights) from a
    fixed seed, with no downloads. Needs the engine extra (torch, transformers)."""
    from sm121.models.tiny import generate_tiny_model

    path = generate_tiny_model(directory)
    console.print(f"tiny model in {path}")


@app.command("random")
def random_model(
    dest: Path | None = typer.Argument(None, help="Folder to write (default: "
                                       "$SM121_HOME/models/SHAPE)."),
    shape: str = typer.Option("tiny", "--shape", help=f"One of: {', '.join(SHAPES)}."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA when torch sees a GPU), "
                               "cuda or cpu."),
    force: bool = typer.Option(False, "--force", help="Replace a model already there."),
    shard_size: str = typer.Option("5GB", "--shard-size", help="Largest weight shard, e.g. "
                                   "500MB (more shards: a staging test has several to copy)."),
    as_json: bool = JSON,
) -> None:
    """A random-weight Llama with a real model's shape and sm121's tiny tokenizer: llama-8b is
    the GPU testbed's (Llama-3-8B dimensions, 13 GiB bf16, about 30 s on a GPU); llama-1b and
    tiny fit a CPU. The gpu-llama recipe serves $SM121_HOME/models/llama-8b."""
    folder = dest or paths.models_dir() / shape
    if not as_json:
        console.print(f"writing a random-weight {shape} model to {folder} ...", style="dim")
    made = generate_random_model(shape, folder, device, force, shard_size)
    result = {"path": str(made.path), "shape": made.shape, "params_b": made.params_b,
              "device": made.device, "s": made.seconds, "reused": made.reused}
    if as_json:
        print_json(result)
    elif made.reused:
        console.print(f"{made.path} already holds the {shape} model ({made.params_b} B params); "
                      "--force makes it again")
    else:
        console.print(f"{made.path}: {made.params_b} B params, made on {made.device} in "
                      f"{made.seconds} s")
