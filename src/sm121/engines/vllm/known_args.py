"""Read the flags `vllm serve` accepts from an INSTALLED vLLM's own argument parser, to bundle
a new version's list (engines/vllm/flags.py reads the bundled lists):

    python -m sm121.engines.vllm.known_args > src/sm121/engines/data/vllm-args-VERSION.txt

For a vLLM that cannot be imported here (a CUDA build), derive the list from its source text
with scripts/vllm_args_from_source.py, or read it from the engine on its node with
`sm121 engine flags RECIPE`.
"""

from __future__ import annotations


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
