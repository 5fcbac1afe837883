"""What a memory plan means: the arithmetic in words, and findings on risky settings."""

from __future__ import annotations

from sm121.findings import Finding, Severity
from sm121.memory.budget import gmu_budget
from sm121.memory.model import Context, MemoryPlan

GMU_FIELD = "args.gpu-memory-utilization"


def explain(plan: MemoryPlan, ctx: Context) -> list[str]:
    lines = [f"node {plan.node}: {plan.node_total_gib:.1f} GiB ({plan.node_how})"]
    if plan.mode == "explicit":
        lines.append(f"KV budget {plan.kv_gib:.2f} GiB, set explicitly by {plan.kv_how}")
    else:
        lines += _gmu_lines(plan)
    if ctx.layout is not None:
        lines.append(f"KV layout: {ctx.layout.describe()}; block size {plan.block_size}")
    if plan.pool_tokens is not None:
        lines.append(f"KV pool {plan.pool_tokens:,} tokens ({plan.num_blocks:,} blocks); "
                     f"{plan.max_concurrency:.2f}x requests at max-model-len "
                     f"{plan.max_model_len:,}; one request alone fits up to "
                     f"{plan.largest_context:,} tokens")
    else:
        lines.append("KV pool in tokens: unknown (no config.json on this machine and no "
                     "observed pool to calibrate from)")
    lines += _check_lines(plan)
    lines += [f"not reproduced: {text}" for text in plan.unreproduced]
    return lines


def _check_lines(plan: MemoryPlan) -> list[str]:
    check = plan.startup
    if check is None:
        return []
    if check.need_gib is None:
        return [f"vLLM's start-up check ({check.rules}): one request's need is unknown "
                f"({check.need_how})"]
    assumed = " (by the assumed need)" if check.need_assumed else ""
    needs = "would need" if check.need_assumed else "needs"
    lines = [f"vLLM's start-up check ({check.rules}): one request at max-model-len "
             f"{plan.max_model_len:,} {needs} {check.need_gib:.2f} GiB of KV ({check.need_how})",
             f"against {check.budget_gib:.2f} GiB ({check.budget_how}): {check.verdict}; it "
             f"passes up to max-model-len {check.largest_context or 0:,}{assumed}"]
    if check.bound:
        lines.append(f"verdict from a boot, not the assumption: {check.bound}")
    if check.booked_kv_gib:
        seen = " / ".join(f"{max(b, 0.0):.2f}" for b in check.booked_kv_gib)
        at = "the observed boots found" if _at_observed(plan) else (
            "with the booking the observed boots had, it would find")
        nominal = ("refuses even then" if check.need_gib > check.nominal_kv_gib else
                   "would pass by this arithmetic; unverified in the field (its open question)")
        lines.append(
            f"page cache booked as used: {at} {seen} GiB for KV ({check.booked_how}); it "
            f"refuses on {check.refuses_on} of {len(check.booked_kv_gib)}. Without the booking "
            f"({check.nominal_kv_gib:.2f} GiB: caches dropped before start, or a MemAvailable-"
            f"reading build) it {nominal}")
    if check.observed:
        lines.append(f"observed at these settings: {check.observed}")
    return lines


def _at_observed(plan: MemoryPlan) -> bool:
    """The booked figures are observations only where they are the boots' own reports (the
    same budget); elsewhere they are the booking carried over, an estimate."""
    check = plan.startup
    seen = {c.observed_kv_gib for c in plan.comparisons if c.observed_kv_gib is not None}
    return check is not None and all(round(b, 2) in seen for b in check.booked_kv_gib)


def _gmu_lines(plan: MemoryPlan) -> list[str]:
    assert plan.gmu is not None and plan.reserve_gib is not None
    requested = plan.gmu * plan.node_total_gib
    lines = [
        f"KV = GMU x total - weights - reserve = {plan.gmu:.2f} x {plan.node_total_gib:.1f} - "
        f"{plan.weights_gib or 0:.2f} - {plan.reserve_gib:.2f} = {requested:.2f} - "
        f"{(plan.weights_gib or 0) + plan.reserve_gib:.2f} = {plan.kv_gib:.2f} GiB",
        f"weights: {plan.weights_how}",
        f"reserve (activations at max-num-batched-tokens {plan.batched_tokens}, CUDA context, "
        f"graphs): {plan.reserve_how}",
        f"GMU is a KV lever here: weights and reserve do not move with it, so each 0.01 of GMU "
        f"is {plan.node_total_gib / 100:.2f} GiB of KV",
    ]
    ceiling = plan.gmu_ceiling
    if ceiling is not None and abs(ceiling - plan.gmu) > 1e-9:
        at = gmu_budget(plan.node_total_gib, ceiling, plan.weights_gib or 0, plan.reserve_gib)
        delta = at.kv_gib - plan.kv_gib
        ratio = f", {at.kv_gib / plan.kv_gib:.1f}x" if plan.kv_gib > 0 else ""
        lines.append(
            f"at the recipe's ceiling {ceiling:.2f} ({plan.gmu_ceiling_how}) the KV would be "
            f"{at.kv_gib:.2f} GiB: "
            f"{delta:+.2f} GiB = ({ceiling:.2f} - {plan.gmu:.2f}) x {plan.node_total_gib:.1f} GiB"
            f"{ratio}; weights ({plan.weights_gib or 0:.2f} GiB) and reserve "
            f"({plan.reserve_gib:.2f} GiB) stay the same")
    return lines


def memory_findings(plan: MemoryPlan, ctx: Context) -> list[Finding]:
    source = f"memory plan ({plan.recipe}, profile {plan.profile or '-'})"
    findings: list[Finding] = []
    if plan.mode == "gmu" and plan.weights_gib is None:
        findings.append(Finding(
            severity=Severity.WARNING, source=source, field="model.size_gb",
            message="the weights are unknown, so the KV budget above counts none: it is too high",
            fix="set model.size_gb in the recipe, pass --weights-gib, or calibrate from a boot"))
    if plan.kv_gib <= 0:
        findings.append(_no_kv(plan, source))
        return findings
    findings += _check_findings(plan, source)
    findings += _below_ceiling(plan, source)
    return findings


def _check_findings(plan: MemoryPlan, source: str) -> list[Finding]:
    """vLLM's start-up check: the need of one request at max-model-len against the budget.
    A boot observed at these same settings wins over the model, and the conflict is said."""
    check = plan.startup
    if check is None or check.need_gib is None or check.refuses is None:
        return []
    field = "args.max-model-len"
    said = (f"one request at max-model-len {plan.max_model_len:,} needs {check.need_gib:.2f} "
            f"GiB of KV in vLLM's start-up check, the budget is {check.budget_gib:.2f} GiB")
    if check.observed.startswith("booted"):
        if not check.refuses:
            return []
        return [Finding(severity=Severity.WARNING, source=source, field=field,
                        message=f"{said}: the model says vLLM refuses, but these settings were "
                                f"observed to boot ({check.observed}): the need calibrated "
                                "elsewhere does not hold here",
                        fix="boot once and calibrate: `sm121 memory calibrate RUN`")]
    largest = check.largest_context or 0
    if check.refuses:
        fixes = [f"lower max-model-len to {largest:,}" if largest else
                 "no max-model-len fits the KV found with the page cache booked; without the "
                 f"booking ({check.nominal_kv_gib:.2f} GiB) it passes up to "
                 f"{check.nominal_largest_context or 0:,}"]
        if check.booked_kv_gib and check.need_gib <= check.nominal_kv_gib:
            fixes.append(
                f"without the booking this arithmetic gives {check.nominal_kv_gib:.2f} GiB, above "
                f"{check.need_gib:.2f}: dropping the page cache before start (hook drop-caches) "
                "or a vLLM that reads MemAvailable (0.32 does on unified memory) aims at that; "
                "unverified in the field (its open question), so neither a yes nor a no")
        elif plan.mode == "gmu":
            fixes.append(_raise_gmu_fix(plan))
        allowed = (f"max-model-len <= {largest:,}" if largest else
                   f"max-model-len <= {check.nominal_largest_context or 0:,} with nothing booked")
        if check.need_assumed:
            # A refusal by a need nobody measured on this stack is a warning, said as such.
            return [Finding(severity=Severity.WARNING, source=source, field=field,
                            message=f"{said.replace(' needs ', ' would need ')} by the assumed "
                                    f"need ({check.need_how}): vLLM would refuse to start",
                            allowed=allowed, fix="; or ".join(fixes))]
        return [Finding(severity=Severity.ERROR, source=source, field=field,
                        message=f"{said}: vLLM refuses to start", allowed=allowed,
                        fix="; or ".join(fixes))]
    if check.refuses_on:
        floor = int(largest * min(check.booked_kv_gib) / check.budget_gib)
        return [Finding(severity=Severity.WARNING, source=source, field=field,
                        message=f"{said} (the median observed boot): it boots there, but "
                                f"refuses on {check.refuses_on} of {len(check.booked_kv_gib)} "
                                f"observed boots ({' / '.join(map(str, check.booked_kv_gib))} "
                                "GiB for KV)",
                        fix=f"keep a margin: max-model-len <= {floor:,}")]
    return []


def _below_ceiling(plan: MemoryPlan, source: str) -> list[Finding]:
    """A GMU under the ceiling is not "safer" when weights dominate: it only costs KV."""
    ceiling = plan.gmu_ceiling
    if plan.mode != "gmu" or plan.gmu is None or ceiling is None or plan.gmu >= ceiling - 0.005:
        return []
    assert plan.reserve_gib is not None
    at = gmu_budget(plan.node_total_gib, ceiling, plan.weights_gib or 0, plan.reserve_gib)
    lost = at.kv_gib - plan.kv_gib
    share = lost / at.kv_gib * 100 if at.kv_gib > 0 else 100.0
    return [Finding(
        severity=Severity.WARNING, source=source, field=GMU_FIELD,
        message=f"{plan.gmu:.2f} is below the ceiling {ceiling:.2f} and costs {lost:.2f} GiB of "
                f"KV ({share:.0f}% of it): {plan.kv_gib:.2f} GiB instead of {at.kv_gib:.2f}. "
                f"Weights take {plan.weights_gib or 0:.1f} of {plan.node_total_gib:.1f} GiB, so "
                "GMU is a KV lever, not a safety lever",
        allowed=f"{ceiling:.2f} (the ceiling, {plan.gmu_ceiling_how})",
        fix=f"set gpu-memory-utilization to {ceiling:.2f}")]


def _no_kv(plan: MemoryPlan, source: str) -> Finding:
    """No KV left: an error when the numbers are measured; when they are estimates, a warning
    that names each assumed number, and says so when the field served this stack anyway."""
    estimated = plan.weights_how.startswith("recipe")  # the size on disk over the ranks
    assumed = []
    if estimated:
        assumed.append(f"weights {plan.weights_gib or 0:.2f} GiB per rank ({plan.weights_how}: "
                       "an estimate, not measured in memory)")
    if not plan.reserve_how.startswith("calibrated") and plan.kv_gib + (plan.reserve_gib or 0) > 0:
        # the estimated reserve is what leaves nothing: the weights alone would leave some
        assumed.append(f"reserve {plan.reserve_gib or 0:.2f} GiB ({plan.reserve_how})")
    decisive = bool(assumed)
    if plan.gmu_ceiling is not None and plan.gmu_ceiling_how.startswith("assumed"):
        assumed.append(f"ceiling {plan.gmu_ceiling:.2f} ({plan.gmu_ceiling_how})")
    served = [c.source for c in plan.comparisons if c.observed_outcome == "boots"]
    message = f"no memory is left for KV ({plan.kv_gib:.2f} GiB) by this arithmetic"
    if assumed:
        message += "; it rests on assumed numbers: " + "; ".join(assumed)
    if served:
        message += (f". The field served this stack ({', '.join(served)}): one of those "
                    "numbers is wrong, not the recipe")
    else:
        message += ": the engine refuses to start" + (" if they hold" if decisive else "")
    return Finding(severity=Severity.WARNING if decisive or served else Severity.ERROR,
                   source=source, field="KV budget", message=message, fix=_raise_gmu_fix(plan))


def _raise_gmu_fix(plan: MemoryPlan) -> str:
    """Raise GMU only where the recipe is below its ceiling; at the ceiling, the levers that
    are left (and a boot, to measure what was estimated)."""
    if plan.mode == "explicit":
        return f"raise the explicit KV size ({plan.kv_how})"
    ceiling = plan.gmu_ceiling
    if ceiling is None:
        return "raise gpu-memory-utilization"
    if plan.gmu is not None and plan.gmu < ceiling - 0.005:
        return f"raise gpu-memory-utilization to {ceiling:.2f} (the ceiling, {plan.gmu_ceiling_how})"
    return (f"gpu-memory-utilization is at the ceiling {ceiling:.2f} ({plan.gmu_ceiling_how}): "
            "lower max-model-len, use a smaller KV dtype or more nodes; and boot once and "
            "calibrate (`sm121 memory calibrate RUN`) to replace the estimates")
