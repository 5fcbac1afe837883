"""A node's vLLM argv: the engine command, the model and sm121's own flags, parallelism, and
vLLM's two multi-node modes: native (--nnodes/--node-rank, headless workers) and Ray (a Ray
head that execs the engine, Ray workers that only join)."""

from __future__ import annotations

from sm121.engines.adapter import NodeArgvRequest
from sm121.engines.vllm import args as _args
from sm121.engines.vllm.args import DOCKER_COMMAND, NATIVE_COMMAND
from sm121.errors import Sm121Error

# vLLM's headless worker for native installs: `python -m vllm.entrypoints.openai.api_server`
# has no headless mode (it would start a second API server on the worker).
HEADLESS_NATIVE_COMMAND = ("python", "-m", "sm121.engines.vllm.headless")
RAY_PORT = 6379
# The head container starts Ray's head, then execs the engine; vLLM waits for the workers'
# Ray nodes to join before it places its ranks. The node IP arrives as $1, the engine as "$@".
_RAY_HEAD_SCRIPT = ('ray start --head --port={port} --node-ip-address="$1" --disable-usage-stats'
                    ' && shift && exec "$@"')


def node_argv(request: NodeArgvRequest) -> tuple[list[str], int | None]:
    """The node's engine argv, and where the engine's own args start in it (after the engine
    command); None when the node runs no engine (a Ray worker)."""
    recipe, rank, node_count = request.recipe, request.rank, request.node_count
    docker = recipe.runtime.kind == "docker"
    command = list(recipe.runtime.command or (DOCKER_COMMAND if docker else NATIVE_COMMAND))
    ray = node_count > 1 and recipe.parallelism.backend == "ray"
    if ray and not docker:
        raise Sm121Error(f"recipe {recipe.name}: parallelism.backend ray needs the docker runtime",
                         "the container holds Ray's daemons, so stop removes them all; natively, "
                         "use backend native (vLLM's --nnodes/--node-rank multi-node)")
    if rank > 0 and ray:
        return ray_worker_argv(request.head_ip, request.node_ip), None
    if rank > 0 and node_count > 1 and tuple(command) == NATIVE_COMMAND:
        command = list(HEADLESS_NATIVE_COMMAND)
    args_at = len(command)
    argv = command + ([request.model_ref] if command[-1] == "serve"
                      else ["--model", request.model_ref])
    argv += ["--served-model-name", recipe.model.id, *recipe.model.aliases,
             "--host", request.host, "--port", str(request.port)]
    if recipe.model.revision:
        argv += ["--revision", recipe.model.revision]
    par = recipe.parallelism
    for flag, value in (("tensor-parallel-size", par.tp), ("pipeline-parallel-size", par.pp),
                        ("decode-context-parallel-size", par.dcp)):
        if value > 1:
            argv += [f"--{flag}", str(value)]
    if ray:
        engine = argv + ["--distributed-executor-backend", "ray"] + _args.render_args(
            request.args, request.known)
        head = ray_head_argv(engine, request.node_ip)
        return head, len(head) - len(engine) + args_at
    if node_count > 1:
        argv += ["--nnodes", str(node_count), "--node-rank", str(rank),
                 "--master-addr", request.head_ip, "--master-port", str(request.master_port)]
        if rank > 0:
            argv.append("--headless")
    return argv + _args.render_args(request.args, request.known), args_at


def ray_head_argv(engine_argv: list[str], node_ip: str) -> list[str]:
    return ["sh", "-c", _RAY_HEAD_SCRIPT.format(port=RAY_PORT), "ray-head", node_ip, *engine_argv]


def ray_worker_argv(head_ip: str, node_ip: str) -> list[str]:
    return ["ray", "start", "--block", f"--address={head_ip}:{RAY_PORT}",
            f"--node-ip-address={node_ip}", "--disable-usage-stats"]
