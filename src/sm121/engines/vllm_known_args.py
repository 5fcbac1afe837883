"""The flags `vllm serve` accepts, read once from vLLM's own argument parser.

The list ships as package data so validation works without vLLM installed (a laptop planning
for a cluster). Regenerate it against a newer vLLM with:

    python -m sm121.engines.vllm_known_args > src/sm121/engines/data/vllm_args.txt
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def known_vllm_args() -> frozenset[str]:
    text = resources.files("sm121.engines").joinpath("data/vllm_args.txt").read_text()
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def _read_from_installed_vllm() -> list[str]:
    from vllm import __version__
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    names = {
        option[2:]
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    }
    return [f"# vllm {__version__}: the long options of `vllm serve`", *sorted(names)]


if __name__ == "__main__":
    print("\n".join(_read_from_installed_vllm()))
