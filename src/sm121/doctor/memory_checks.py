"""Memory checks on a node: free/available/cache/swap, weights in page cache, weights against
RAM (does a warm-read help?), the GMU setting, and the UMA gate."""

from __future__ import annotations

from sm121.doctor.model import CheckResult, NodeContext, node_finding, result
from sm121.findings import Finding, Severity
from sm121.hosts.facts import HostFacts
from sm121.memory.budget import GIB
from sm121.memory.model import DEFAULT_GMU
from sm121.memory.provenance import release
from sm121.memory.startup_check import StartupCheck, rules_for
from sm121.memory.uma import GateInput, GatePrediction, describe, predict_gate

LOW_AVAILABLE = 0.10  # MemAvailable under 10% of MemTotal: the node is under pressure
DROP_CACHES = "sync; echo 3 > /proc/sys/vm/drop_caches"


def check_memory(facts: HostFacts, ctx: NodeContext) -> CheckResult:
    total, free, available = facts.gib("MemTotal"), facts.gib("MemFree"), facts.gib("MemAvailable")
    cache = facts.gib("Cached") + facts.gib("Buffers")
    swap_used = facts.gib("SwapTotal") - facts.gib("SwapFree")
    summary = (f"total {total:.1f} GiB, free {free:.1f}, available {available:.1f}, page cache "
               f"{cache:.1f}, swap used {swap_used:.1f} of {facts.gib('SwapTotal'):.1f}")
    findings = []
    if total and available < LOW_AVAILABLE * total:
        findings.append(node_finding(ctx, Severity.WARNING, "memory",
                                 f"only {available:.1f} of {total:.1f} GiB available",
                                 "stop what holds memory before a serve (sm121 status lists runs)"))
    if swap_used > 1.0:
        findings.append(node_finding(ctx, Severity.WARNING, "swap",
                                 f"{swap_used:.1f} GiB swapped out: the node has been under "
                                 "memory pressure", "check what runs beside the engine"))
    return result("memory", summary, findings)


def check_weights_cache(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    weights = facts.weights
    if not weights.get("files"):
        return None
    size, cached = weights["bytes"], weights["cached_bytes"]
    share = 100.0 * cached / size if size else 0.0
    return result("weights-cache", f"{_size(cached)} of {_size(size)} of weights in page cache "
                  f"({share:.1f}%, mincore over {weights['files']} files)", ok="info")


def _size(count: int) -> str:
    return f"{count / GIB:.2f} GiB" if count >= GIB // 10 else f"{count / 1024**2:.1f} MiB"


def check_weights_vs_ram(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    """Two questions, one rule each (the `warm-read` hook applies the first):

    1. Does a warm-read before start help the load? Yes when the weights this node reads fit
       in MemAvailable before the engine starts: the load happens before the engine holds
       its share, so the pages read stay until the loader reads them (the field, Laguna 67 GB:
       8.75 s a shard warm against 11.5 s cold). A model larger than MemAvailable evicts its
       own first shards (the field, GLM-5.2 406 GB on 121 GB nodes: 0.0% cached).
    2. Do the pages survive while serving? Only in what is left beside the engine's hold
       (MemAvailable less GMU x MemTotal on unified memory): else every start reads again."""
    reads = facts.weights.get("bytes") or ctx.model_share_bytes
    if not reads:
        return None
    size, total = reads / GIB, facts.gib("MemTotal")
    available = facts.gib("MemAvailable")
    gmu = _gmu(ctx)
    held = gmu * total
    room = max(0.0, available - held)
    how = f" ({ctx.reads_how})" if ctx.reads_how else ""
    summary = (f"this node reads {size:.1f} GiB at each start{how}; MemAvailable before the "
               f"engine starts {available:.1f} GiB; while serving the engine holds {gmu:.2f} x "
               f"{total:.1f} = {held:.1f} GiB, leaving about {room:.1f} GiB for the page cache")
    if size >= available:
        return result("weights-vs-ram", summary, [node_finding(
            ctx, Severity.WARNING, "weights",
            f"{size:.1f} GiB of weights cannot stay in the page cache ({available:.1f} GiB "
            "available before the engine starts): every start re-reads them all, and a "
            "warm-read before start does not help (it would only evict itself); the field "
            "measured 0.0% cached for GLM-5.2's 406 GB on 121 GB nodes",
            "keep the weights on local NVMe (`sm121 stage`), or a loader that reads only "
            "this node's shard once a boot proves it")])
    cached = facts.weights.get("cached_bytes", 0) / GIB
    load = ("already warm" if size and cached >= 0.95 * size else
            "a warm-read before start (hook warm-read) helps the load: the weights fit in "
            "MemAvailable before the engine starts (measured on Laguna S 2.1, 67 GB: 8.75 s a "
            "shard warm, 11.5 cold)")
    serving = ("the pages also survive while serving" if size <= room else
               f"they do not survive while serving ({room:.1f} GiB left beside the engine), so "
               "each start reads them again")
    uma = ""
    if ctx.memory is not None and ctx.memory.startup and ctx.memory.startup.booked_kv_gib:
        uma = ("; on this engine (it reads MemFree) the same pages lower the KV its start-up "
               "check finds (UMA gate)")
    return result("weights-vs-ram", f"{summary}: {load}; {serving}{uma}", ok="info")


def _gmu(ctx: NodeContext) -> float:
    if ctx.engine is not None and ctx.engine.memory.gmu is None:
        # No memory share (llama.cpp): its weights are mmapped, so they ARE page cache, and
        # it holds only its KV context beside them.
        return 0.0
    if ctx.memory is not None and ctx.memory.gmu is not None:
        return ctx.memory.gmu
    if ctx.recipe is None or ctx.engine is None:
        return 0.0  # no engine planned: nothing is held beside the cache
    value = ctx.engine.memory.value(ctx.args, ctx.engine.memory.gmu)
    return float(value) if isinstance(value, (int, float)) else DEFAULT_GMU


def check_gmu(ctx: NodeContext) -> CheckResult | None:
    if ctx.recipe is None or ctx.engine is None:
        return None
    engine = ctx.engine
    name = engine.memory.gmu
    findings = engine.check_limits(ctx.recipe, ctx.args, ctx.cluster_source or "recipe", "args")
    if name is None:
        # No memory share (llama.cpp sizes by its context): the check is the per-request
        # context instead (the per-slot rule's finding, when the context is split).
        window = engine.memory.per_request_context(ctx.args)
        said = f"{window:,} tokens" if window else "the model's own (from the GGUF)"
        return result("context", f"{engine.label}: each request's context {said}", findings)
    how = ""
    if ctx.memory is not None:
        # The GMU's own findings, and the KV budget's: "gmu ok" beside no KV would mislead.
        findings += [f for f in ctx.memory.findings if name in f.field or f.field == "KV budget"]
        how = f" ({ctx.memory.gmu_ceiling_how})" if ctx.memory.gmu_ceiling_how else ""
    gmu = ctx.args.get(name)
    ceiling = ctx.recipe.limits.gmu_ceiling
    return result("gmu", f"{name} {gmu if gmu is not None else f'({engine.label} default)'}"
                  f", ceiling {ceiling if ceiling is not None else '-'}{how}", findings)


def check_uma_gate(facts: HostFacts, ctx: NodeContext) -> CheckResult | None:
    if ctx.engine is not None and ctx.engine.memory.gmu is None:
        return None  # a vLLM start check; an engine without a memory share has none
    plan = ctx.memory
    check = plan.startup if plan is not None else None
    if plan is None or plan.mode != "gmu" or check is None or check.need_gib is None:
        return None
    rules = rules_for(ctx.recipe.engine.version if ctx.recipe else None)
    prediction = predict_gate(GateInput(
        mem_total_kib=facts.meminfo.get("MemTotal", 0), mem_free_kib=facts.meminfo.get("MemFree", 0),
        mem_available_kib=facts.meminfo.get("MemAvailable", 0), gmu=plan.gmu or 0.0,
        reads_memfree=rules.reads_memfree_on_uma,
        version=release(ctx.recipe.engine.version if ctx.recipe else None) or rules.version,
        nominal_kv_gib=check.nominal_kv_gib, booked_kv_gib=check.booked_kv_gib,
        need_gib=check.need_gib, max_model_len=plan.max_model_len, bound=check.bound,
        need_assumed=check.need_assumed, calibrated=check.calibrated_from_boots))
    summary = describe(prediction)
    findings: list[Finding] = []
    # MemFree below the request at start is said in the summary, not counted as a refusal: the
    # field's Laguna 32K boot with the page cache kept passed the start and was refused, if at
    # all, only at the KV check after loading.
    if prediction.refuses:
        findings.append(node_finding(ctx, Severity.ERROR, "UMA gate (vLLM #48140)", summary,
                                     "; ".join(_gate_fixes(prediction, plan.startup))))
    return result("uma-gate", summary, findings)


def _gate_fixes(prediction: GatePrediction, check: StartupCheck | None) -> list[str]:
    """The field's two choices, with their status, then the arithmetic's own."""
    largest = (check.largest_context if check else None) or 0
    if prediction.nominal_refuses:
        return [f"lower max-model-len to {largest:,} or raise gpu-memory-utilization if it is "
                f"below its ceiling: even with no page cache booked the KV "
                f"({prediction.nominal_kv_gib:.2f} GiB) does not hold {prediction.need_gib:.2f} GiB"]
    arithmetic = (f"without the booking this arithmetic gives {prediction.nominal_kv_gib:.2f} GiB "
                  f"against {prediction.need_gib:.2f}")
    return [f"drop the page cache before start (hook drop-caches: {DROP_CACHES}; needs root or "
            f"`sudo -n`): unverified in the field (its open question: neither a yes nor a no); "
            f"{arithmetic}",
            "or a vLLM that reads MemAvailable (the field: a local patch of gpu_worker.py; "
            "vLLM 0.32 reads it on an integrated GPU)",
            f"or lower max-model-len to {largest:,}" if largest else
            "no max-model-len fits with the page cache booked"]
