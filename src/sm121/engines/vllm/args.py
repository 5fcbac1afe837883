"""What sm121 knows about vLLM: flags, derived values, the rules a profile must obey."""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping

from sm121.engines.vllm.flags import choose, recipe_key
from sm121.engines.vllm.trust import resolve
from sm121.findings import Finding, Severity
from sm121.recipes.schema import ArgValue, Recipe, SpecKRule

NATIVE_COMMAND = ("python", "-m", "vllm.entrypoints.openai.api_server")
DOCKER_COMMAND = ("vllm", "serve")

GMU = "gpu-memory-utilization"
MAX_NUM_SEQS = "max-num-seqs"
CAPTURE_SIZE = "max-cudagraph-capture-size"
SPECULATIVE_CONFIG = "speculative-config"
# Flags sm121 sets itself from the recipe and the plan; a recipe or profile must not.
OWNED_BY_SM121 = frozenset(
    {"model", "served-model-name", "host", "port", "nnodes", "node-rank", "master-addr", "master-port",
     "headless", "tensor-parallel-size", "pipeline-parallel-size", "decode-context-parallel-size",
     "revision", SPECULATIVE_CONFIG}
)

# Flags that carry a secret on the engine's command line (visible in /proc, the plan, the run
# directory and results), and the environment variable the engine reads instead.
SECRET_ARGS = {"api-key": "VLLM_API_KEY", "hf-token": "HF_TOKEN"}


def render_args(args: Mapping[str, ArgValue], known: Collection[str] = ()) -> list[str]:
    """Engine args as argv, one token each, so no value can become a token of its own:
    `--name=value`; `True` is the bare flag; `False` the `--no-name` form where the engine has
    one (`known`: its flag list), else omitted (the flag's default is off); `None` omits."""
    argv: list[str] = []
    for name, value in args.items():
        if value is None:
            continue
        if value is True:
            argv.append(f"--{name}")
        elif value is False:
            if f"no-{name}" in known:
                argv.append(f"--no-{name}")
        else:
            argv.append(f"--{name}={value if isinstance(value, str) else json.dumps(value)}")
    return argv


def known_flags(recipe: Recipe) -> frozenset[str]:
    """The flags of the recipe's engine (the list of its engine.version), with the ones a
    patched build adds (engine.extra_known_args)."""
    return (choose(recipe.engine.version, recipe.runtime.image, recipe_key(recipe)).flags.flags
            | frozenset(recipe.engine.extra_known_args))


def speculative_k_allowed(rule: SpecKRule, k: int) -> bool:
    if rule is SpecKRule.LE5_OR_MULTIPLE_OF_5:
        return k <= 5 or k % 5 == 0
    return True


def derived_args(recipe: Recipe, args: Mapping[str, ArgValue]) -> dict[str, tuple[ArgValue, str]]:
    """Values computed from others, never typed twice. name -> (value, how it was derived)."""
    derived: dict[str, tuple[ArgValue, str]] = {}
    spec = recipe.speculative
    if spec is None:
        return derived
    config = {"method": spec.method, "num_speculative_tokens": spec.k}
    derived[SPECULATIVE_CONFIG] = (json.dumps(config), f"speculative.method={spec.method}, k={spec.k}")
    seqs = args.get(MAX_NUM_SEQS)
    if isinstance(seqs, int):
        derived[CAPTURE_SIZE] = (
            seqs * (spec.k + 1),
            f"max-num-seqs x (k+1) = {seqs} x {spec.k + 1}",
        )
    return derived


def check_args(
    recipe: Recipe, args: Mapping[str, ArgValue], source: str, field: str
) -> list[Finding]:
    """Unknown flags (against the list of the recipe's engine.version), flags sm121 owns, and
    typed-twice derived values."""
    choice = choose(recipe.engine.version, recipe.runtime.image, recipe_key(recipe))
    known = choice.flags.flags | set(recipe.engine.extra_known_args)
    findings: list[Finding] = []
    if choice.warning and args:
        findings.append(Finding(
            severity=Severity.WARNING, source=source, field="engine.version",
            message=choice.warning,
            fix="read the list from the engine itself: sm121 engine flags RECIPE [--cluster FILE]",
        ))
    for given, value in args.items():
        # vLLM's parser accepts any unique prefix of a flag (allow_abbrev): read the name as it
        # does, so `hos` is --host and `trust-remote-cod` is --trust-remote-code.
        target = resolve(given, choice.flags.flags)
        name = target or given
        if target is not None and target != given:
            findings.append(_error(source, f"{field}.{given}", f"abbreviates --{target}, which "
                                   "vLLM's parser reads for it; write the full name"))
        if name in SECRET_ARGS and value not in (None, True, False):
            findings.append(Finding(
                severity=Severity.ERROR, source=source, field=f"{field}.{given}",
                message="puts a secret on the engine's command line, the plan and the run "
                        "directory",
                fix=f"remove it and export {SECRET_ARGS[name]} where you run sm121: it reaches "
                    "the engine through its environment, never a command line",
            ))
        elif name in ("host", "port"):
            findings.append(_error(source, f"{field}.{given}", f"is sm121's own flag: pass "
                                   f"--{name} to sm121 (status and readiness read it)"))
        elif name in OWNED_BY_SM121:
            findings.append(_error(source, f"{field}.{given}", "is set by sm121 from the recipe "
                                   "(model, parallelism, speculative) and the plan; remove it here"))
        elif name in (CAPTURE_SIZE,) and recipe.speculative is not None:
            findings.append(_error(source, f"{field}.{given}", "is derived as max-num-seqs x "
                                   "(k+1); do not type it twice"))
        elif target is None and given not in known:
            close = difflib.get_close_matches(given, sorted(known), n=3)
            findings.append(Finding(
                severity=Severity.ERROR, source=source, field=f"{field}.{given}",
                message=f"is not a flag of vLLM {choice.flags.version} ({choice.flags.source} list)",
                allowed=", ".join(close) if close else "a flag of `vllm serve --help=all`",
                fix="correct the name, or list it under engine.extra_known_args for a patched build",
            ))
    return findings


def check_limits(
    recipe: Recipe, args: Mapping[str, ArgValue], source: str, field: str
) -> list[Finding]:
    findings: list[Finding] = []
    gmu = args.get(GMU)
    ceiling = recipe.limits.gmu_ceiling
    if isinstance(gmu, int | float) and ceiling is not None and gmu > ceiling:
        findings.append(Finding(
            severity=recipe.limits.gmu_ceiling_severity, source=source, field=f"{field}.{GMU}",
            message=f"{gmu} is above this recipe's ceiling {ceiling}. {recipe.limits.gmu_ceiling_reason}",
            allowed=f"<= {ceiling}",
            fix=f"set {GMU} to {ceiling} or lower",
        ))
    spec = recipe.speculative
    if spec is not None and not speculative_k_allowed(recipe.limits.speculative_k_rule, spec.k):
        findings.append(Finding(
            severity=Severity.ERROR, source=source, field="speculative.k",
            message=f"k={spec.k} is rejected by the engine at boot",
            allowed="k <= 5 or a multiple of 5 (1-5, 10, 15, ...)",
            fix="use k=5",
        ))
    return findings


def _error(source: str, field: str, message: str) -> Finding:
    return Finding(severity=Severity.ERROR, source=source, field=field, message=message)
