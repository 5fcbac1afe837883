"""`sm121 stage RECIPE --cluster FILE`: weights (and compile caches, images) onto every node's
local disk, over the fabric, verified; progress per node and in total."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import typer
from rich.table import Table

from sm121.cli.options import JSON, PROFILE, TRUST
from sm121.cli.output import console, err_console, print_json
from sm121.cli.progress import LongWait
from sm121.cluster.hosts import host_needs
from sm121.cluster.spec import load_cluster
from sm121.cluster.trust import cluster_needs, require_cluster_trust
from sm121.errors import Sm121Error
from sm121.plan.effective import resolve_profile
from sm121.plan.trust import model_needs, require_trust
from sm121.recipes.loader import load_recipe
from sm121.stage.caches import CacheResult, stage_cache
from sm121.stage.images import ImageResult, stage_image
from sm121.stage.layout import model_key
from sm121.stage.nodes import stage_nodes
from sm121.stage.progress import Snapshot
from sm121.stage.weights import WeightsRequest, WeightsResult, stage_weights

WHAT = ("weights", "cache", "image")


def register(root: typer.Typer) -> None:
    root.command("stage")(stage)


def stage(
    recipe: str = typer.Argument(..., help="Recipe name or YAML path."),
    profile: str | None = PROFILE,
    cluster: str = typer.Option(..., "--cluster", "-c", help="Cluster YAML: the nodes to "
                                "stage onto."),
    source: str | None = typer.Option(None, "--from", help="Copy from this node, or from a "
                                      "model folder on this machine (default: the head)."),
    what: str = typer.Option("weights", "--what", help="Comma list of: weights, cache, image."),
    link: str = typer.Option("fabric", "--link", help="fabric (each node's fabric_ip) or mgmt "
                             "(the ssh address: the management link)."),
    via: str = typer.Option("auto", "--via", help="auto (rsync where both ends have it, else "
                            "tar over ssh), rsync or tar."),
    verify: bool = typer.Option(False, "--verify", help="Checksum every staged file again, not "
                                "only files changed since they were verified."),
    trust: bool = TRUST,
    as_json: bool = JSON,
) -> None:
    """Copy the recipe's model (HF cache layout, at its pinned revision) to each node's local
    cache, from the head over the fabric: nodes in parallel, a tree for 4+ nodes (the head
    sends at most 2 copies), resumable, verified per file by size and sha256, with a manifest
    on each node that plan, doctor and cluster check read."""
    parts = [p.strip() for p in what.split(",") if p.strip()]
    unknown = [p for p in parts if p not in WHAT]
    if unknown or not parts:
        raise Sm121Error(f"--what {what}: unknown part(s) {unknown}", f"use {', '.join(WHAT)}")
    if link not in ("fabric", "mgmt"):
        raise Sm121Error(f"--link {link}: not fabric or mgmt", "use --link fabric or mgmt")
    if via not in ("auto", "rsync", "tar"):
        raise Sm121Error(f"--via {via}: not auto, rsync or tar", "use auto, rsync or tar")
    loaded = load_recipe(recipe)
    # The weights and image are the profile's too; the name is checked, so a typo is an error.
    profile = resolve_profile(loaded.recipe, profile, loaded.source)
    if "weights" in parts and not loaded.builtin and source is None:
        # A recipe from elsewhere would otherwise copy any folder of the head to every node.
        require_trust(loaded.recipe.name, model_needs(loaded.recipe), trust)
    image = loaded.recipe.runtime.image
    if "image" in parts and (loaded.recipe.runtime.kind != "docker" or not image):
        raise Sm121Error(f"--what image: recipe {loaded.recipe.name} runs natively, with no "
                         "image", "leave image out of --what")
    spec, cluster_source = load_cluster(cluster)
    # Its ssh_config reaches every node (and every hop between nodes); a node's python tells
    # the cache key; a compile_cache receives another node's folder: refused before any ssh.
    # And each remote host it names receives the weights (gated ones too) unless the file is
    # the user's own (cluster/hosts.py).
    sent = f"the staged {' and '.join(parts)} of {loaded.recipe.model.id}"
    require_cluster_trust(cluster_source, cluster_needs(spec) + host_needs(
        spec, cluster_source, lambda _node: sent), trust)
    nodes = stage_nodes(spec, link)  # type: ignore[arg-type]
    results: dict[str, Any] = {"recipe": loaded.recipe.name, "profile": profile}
    failed: list[str] = []
    if "weights" in parts:
        request = WeightsRequest(loaded.recipe, spec, source, link, via,  # type: ignore[arg-type]
                                 verify)
        with _progress(as_json, "staging weights") as report:
            weights = stage_weights(request, nodes, report=report)
        results["weights"] = weights.model_dump()
        failed += [f"{n.node}: {n.error}" for n in weights.nodes if n.status == "failed"]
        if not as_json:
            _print_weights(weights)
    if "cache" in parts:
        cache = stage_cache(loaded.recipe, spec, nodes, source, model_key(loaded.recipe), via)
        results["cache"] = cache.model_dump()
        failed += [f"{n.node}: {n.error}" for n in cache.nodes if n.status == "failed"]
        if not as_json:
            _print_cache(cache)
    if "image" in parts:
        assert image is not None
        with _progress(as_json, "staging the image") as report:
            staged = stage_image(image, spec, nodes, source, model_key(loaded.recipe),
                                 report=report)
        results["image"] = staged.model_dump()
        failed += [f"{n.node}: {n.error}" for n in staged.nodes if n.status == "failed"]
        if not as_json:
            _print_image(staged)
    if as_json:
        print_json(results)
    if failed:
        raise Sm121Error(f"staging failed on {len(failed)} node(s): " + "; ".join(failed),
                         "fix the cause and run the same command again: it resumes")


@contextlib.contextmanager
def _progress(quiet: bool, title: str) -> Iterator[Callable[[Snapshot], None]]:
    """A rich bar on a terminal (plain lines otherwise) of bytes, rate and ETA; with --json a
    line every 10 s on stderr, so stdout stays JSON."""
    if quiet:
        last = [0.0]

        def sparse(snap: Snapshot) -> None:
            if time.monotonic() - last[0] >= 10:
                last[0] = time.monotonic()
                err_console.print(progress_line(snap), highlight=False)

        yield sparse
        return
    with LongWait(title, err_console) as wait:
        yield lambda snap: wait.update(progress_line(snap), snap.done_bytes,
                                       snap.total_bytes or 1)


def progress_line(snap: Snapshot) -> str:
    nodes = "; ".join(f"{n.node}<-{n.sender} {_pct(n.done_bytes, n.total_bytes)} "
                      f"{_rate(n.rate_bps)} ETA {_eta(n.eta_s)}" for n in snap.nodes)
    return (f"stage {snap.elapsed_s:.0f}s: {_gb(snap.done_bytes)} of {_gb(snap.total_bytes)} "
            f"({_pct(snap.done_bytes, snap.total_bytes)}), {_rate(snap.rate_bps)}, "
            f"ETA {_eta(snap.eta_s)}" + (f" | {nodes}" if nodes else ""))


def _print_weights(result: WeightsResult) -> None:
    console.print(f"weights {result.model} @ {result.revision}: {result.files} files, "
                  f"{_gb(result.bytes)} from {result.source} (checksums read "
                  f"{_gb(result.source_read_for_sums)} of it now)")
    table = Table("node", "status", "from", "via", "sent", "s", "rate", "re-copied", "folder")
    for n in result.nodes:
        rate = _rate(n.bytes_sent / n.seconds) if n.seconds else "-"
        table.add_row(n.node, n.status if not n.error else f"{n.status}: {n.error[:80]}",
                      n.sender or "-", n.method or "-", _gb(n.bytes_sent), f"{n.seconds:.1f}",
                      rate, ", ".join(n.recopied) or "-", n.folder)
    console.print(table)
    copies = ", ".join(f"{k} {v}" for k, v in result.copies_sent.items()) or "none"
    console.print(f"full copies sent to other nodes: {copies}; {result.seconds:.1f} s in all")


def _print_cache(result: CacheResult) -> None:
    key = result.key
    console.print(f"compile cache {result.folder} on {result.source} (gpu {key.gpu}, engine "
                  f"{key.engine}, image {key.image[:19]})")
    for n in result.nodes:
        detail = {"source": f"{n.files} files, {_gb(n.bytes)}",
                  "staged": f"from {n.sender} via {n.method}, {_gb(n.bytes_sent)} sent in "
                            f"{n.seconds:.1f} s"}.get(n.status, n.error)
        console.print(f"  {n.node}: {n.status} {detail}")


def _print_image(result: ImageResult) -> None:
    console.print(f"image {result.image} ({result.id[:19]}) from {result.source}")
    for n in result.nodes:
        rate = _rate(n.bytes_sent / n.seconds) if n.seconds else "-"
        console.print(f"  {n.node}: {n.status}" + (f" from {n.sender}, {_gb(n.bytes_sent)} in "
                      f"{n.seconds:.1f} s ({rate})" if n.status == "loaded" else "")
                      + (f" {n.error}" if n.error else ""))


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _rate(bps: float) -> str:
    return f"{bps / 1e6:.0f} MB/s"


def _pct(done: int, total: int) -> str:
    return f"{100 * done / total:.0f}%" if total else "-"


def _eta(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.0f}s"
