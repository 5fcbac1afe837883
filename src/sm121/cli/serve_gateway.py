"""Whether `sm121 serve` puts the gateway in front of the engine.

A recipe whose request policy strips or rejects parameters exists because some parameter
harms this engine (DS4's repetition_penalty kills the container): served without the gateway
nothing enforces it. So the gateway is on by default for such a recipe (unless its policy
says `serve_with_gateway: false`: tiny-cpu's protects nothing); `--no-gateway` opts out, with
a warning naming what then reaches the engine unfiltered."""

from __future__ import annotations

from sm121.cli.output import console
from sm121.plan.model import ServePlan


def gateway_choice(plan: ServePlan, asked: bool | None, joining: bool) -> tuple[bool, str]:
    """(start a gateway?, the warning when the policy is left unenforced)."""
    policy = plan.request_policy
    guarded = policy.params if policy.serve_with_gateway else {}
    if asked is None:
        return bool(guarded) and not joining, ""
    if asked or not guarded or joining:
        return asked, ""
    exposed = "; ".join(f"{name} ({rule.action.value} in the policy: {rule.reason})"
                        for name, rule in guarded.items())
    return False, (f"warning: --no-gateway: the engine is reached directly and {plan.recipe}'s "
                   f"request policy is not enforced, so clients can send it: {exposed}")


def print_gateway_plan(plan: ServePlan, port: int | None, unguarded: str) -> None:
    if port is not None:
        why = ("the request policy " + ", ".join(
            f"{name}: {rule.action.value}" for name, rule in plan.request_policy.params.items())
            if plan.request_policy.params else "asked with --gateway")
        console.print(f"\ngateway: http://127.0.0.1:{port}/v1 in front of the engine ({why}); "
                      "agents use this URL (--no-gateway to serve without it)", highlight=False)
    elif unguarded:
        console.print(f"\n[yellow]{unguarded}[/]", highlight=False)
