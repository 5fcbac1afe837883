"""Issue 30, env families: a recipe that is not built in may set only reviewed environment
variable names (engines/vllm/env_names.py), each with its kind of value. The reproductions
(NCCL_COMM_ID, VLLM_DP_MASTER_IP, UCX_GDB_COMMAND planned with no trust item on main, whose
family rule was a deny-list of words) go through the real command line: `sm121 plan` and
`sm121 serve` refuse them naming the variable, its value and --trust, and nothing is started;
with --trust the plan hands the engine exactly what was asked.

Failed on main before the fix: test_the_issue_env_names_are_refused_without_trust (the plan
exited 0 with needs_trust == []) and test_unlisted_names_in_a_family_need_trust; the value
kinds and the tiny-cpu copy (TORCH_LOGS in agent-compiled) were new too."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml
from support import invoke_cli

from sm121 import paths
from sm121.engines.vllm import env_names
from sm121.recipes.loader import builtin_names

ISSUE = {"NCCL_COMM_ID": "203.0.113.7:5555", "VLLM_DP_MASTER_IP": "203.0.113.7",
         "UCX_GDB_COMMAND": "gdb"}


def _recipe(folder: Path, env: dict[str, str], name: str = "stranger") -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "model": {"id": "m", "source": "tiny"},
                                    "env": env}))
    return path


@pytest.mark.parametrize(("name", "value"), ISSUE.items())
def test_the_issue_env_names_are_refused_without_trust(name: str, value: str,
                                                        tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, {name: value})
    runs_before = set(paths.runs_dir().glob("*")) if paths.runs_dir().exists() else set()
    for argv in (["plan", str(recipe)], ["serve", str(recipe)]):
        result = invoke_cli(*argv, check=False)
        assert result.returncode == 2, (argv, result.stdout, result.stderr)
        said = result.stdout + result.stderr
        assert f"env.{name}" in said and repr(value) in said and "--trust" in said, said
    after = set(paths.runs_dir().glob("*")) if paths.runs_dir().exists() else set()
    assert after == runs_before  # nothing was started or written
    trusted = invoke_cli("plan", str(recipe), "--trust", "--json")
    assert json.loads(trusted.stdout)["nodes"][0]["env"][name] == value


@pytest.mark.parametrize("name", ["VLLM_SOME_NEW_KNOB", "NCCL_IB_ADDR_RANGE", "UCX_SOCKADDR_CM",
                                  "CUDA_MPS_LOG_DIRECTORY", "VLLM_RPC_BASE_PATH"])
def test_unlisted_names_in_a_family_need_trust(name: str, tmp_path: Path) -> None:
    result = invoke_cli("plan", str(_recipe(tmp_path, {name: "1"})), check=False)
    assert result.returncode == 2
    assert f"env.{name}: is not on the reviewed list" in result.stdout + result.stderr


@pytest.mark.parametrize(("name", "value", "says"), [
    ("NCCL_NET", "AWS Libfabric", "takes one of IB, Socket"),
    ("NCCL_NET", "ib", "takes one of IB, Socket"),
    ("NCCL_IB_HCA", "mlx5_0:1;id", "kind hcas"),
    ("NCCL_SOCKET_IFNAME", "eth0 lo", "kind interfaces"),
    ("NCCL_IB_GID_INDEX", "3a", "kind int"),
    ("VLLM_ENFORCE_STRICT_TOOL_CALLING", "yes", "kind bool"),
    ("TORCH_LOGS", "a..b", "no `..`"),
])
def test_a_listed_name_takes_only_its_kind_of_value(name: str, value: str, says: str,
                                                    tmp_path: Path) -> None:
    result = invoke_cli("plan", str(_recipe(tmp_path, {name: value})), check=False)
    assert result.returncode == 2
    said = result.stdout + result.stderr
    assert f"env.{name}:" in said and says in said and repr(value) in said, said


def test_legitimate_tuning_plans_without_trust(tmp_path: Path) -> None:
    env = {"NCCL_NET": "Socket", "NCCL_IB_HCA": "^=mlx5_0:1,mlx5_1", "NCCL_SOCKET_IFNAME": "=enp1s0f1np1",
           "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_IB_DISABLE": "0",
           "NCCL_IB_GID_INDEX": "3", "UCX_TLS": "rc,cuda_copy", "CUDA_VISIBLE_DEVICES": "0",
           "VLLM_LOGGING_LEVEL": "DEBUG", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
           "TORCH_LOGS": "+dynamo,torch._inductor.codecache", "VLLM_CPU_OMP_THREADS_BIND": "0-3|4-7"}
    result = invoke_cli("plan", str(_recipe(tmp_path, env)), "--json")
    plan = json.loads(result.stdout)
    assert plan["needs_trust"] == [] and plan["nodes"][0]["env"] == env


@pytest.mark.parametrize("name", builtin_names())
def test_every_built_in_recipes_env_needs_no_trust_in_a_strangers_copy(
        name: str, tmp_path: Path) -> None:
    """Each profile's env of each built-in recipe, as a stranger's copy, asks for nothing."""
    text = resources.files("sm121.recipes").joinpath(f"builtin/{name}.yaml").read_text()
    data = yaml.safe_load(text)
    for profile in list(data.get("profiles") or {}) or [None]:
        env = {**(data.get("env") or {}),
               **((data.get("profiles") or {}).get(profile, {}).get("env") or {})}
        result = invoke_cli("plan", str(_recipe(tmp_path, env, f"copy-{name}")), "--json",
                            check=False)
        assert result.returncode == 0, (name, profile, result.stdout, result.stderr)
        assert json.loads(result.stdout)["needs_trust"] == [], (name, profile)


# A review tripwire, not the rule: no allow-listed name may carry a word that says it names
# an address, port, id, host, file, plugin or command.
_TELLING = re.compile(r"(^|_)(IP|ADDR|ADDRESS|PORT|ID|HOST|HOSTNAME|URL|URI|PATH|FILE|DIR|"
                      r"DIRECTORY|ROOT|PLUGIN|PLUGINS|MODULE|COMMAND|CMD|EXEC|SCRIPT|SO)(_|$)")


def test_the_allow_list_is_reviewed_and_its_vllm_names_are_vllms() -> None:
    assert not set(env_names.ALLOWED) & set(env_names.REFUSED)
    # Read and kept despite the word: a choice of IPv4/IPv6, a choice of lazy/eager loading.
    despite = {"NCCL_IB_ADDR_FAMILY", "CUDA_MODULE_LOADING"}
    assert [n for n in env_names.ALLOWED if _TELLING.search(n) and n not in despite] == []
    assert all(rule.why for rule in env_names.ALLOWED.values())
    envs = resources.files("vllm").joinpath("envs.py").read_text()
    older = {"VLLM_ATTENTION_BACKEND", "VLLM_USE_V1"}  # flags since, kept for older images
    missing = [n for n in env_names.ALLOWED | env_names.REFUSED
               if n.startswith("VLLM_") and n not in older and f'"{n}"' not in envs]
    assert missing == []
