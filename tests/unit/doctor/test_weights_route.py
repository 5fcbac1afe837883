"""The doctor's weights-route check: where a node reads the recipe's weights from at the next
serve (staged locally, local disk, NFS over the fabric, NFS over the management link with the
load tax), with the stage command as the fix."""

from __future__ import annotations

from doctor_hosts import probe_tree

from sm121.doctor.model import NodeContext
from sm121.doctor.network_checks import check_caches
from sm121.doctor.weights_route import check_weights_route, load_tax_s
from sm121.hosts.facts import HostFacts
from sm121.recipes.loader import load_recipe
from sm121.stage.manifest import NodeManifest, StagedFile, StagedWeights

GLM_BYTES = 406_000_000_000
STAGE = "sm121 stage glm-5.2 --cluster spark.yaml"


def ctx(**fields: object) -> NodeContext:
    return NodeContext(name="spark1", recipe=load_recipe("glm-5.2").recipe,
                       model_share_bytes=GLM_BYTES, stage_command=STAGE,
                       **fields)  # type: ignore[arg-type]


def with_weights(facts: HostFacts, real: str, exists: bool = True) -> HostFacts:
    where = {"path": real, "realpath": real, "exists": exists}
    return facts.model_copy(update={"paths": facts.paths | {"weights": where}})


def test_the_fields_case_nfs_over_the_management_link_costs_a_load_tax() -> None:
    facts = with_weights(probe_tree("gb10-head"), "/root/.cache/huggingface/hub/models--z")
    check = check_weights_route(facts, ctx())
    assert check is not None and check.status == "warning"
    assert "management link" in check.summary
    (finding,) = check.findings
    # 406 GB at the field's measured ~1.1 GB/s over the 10G link: about 370 s per node
    assert "enP7s7 (10 Gb/s)" in finding.message and "about 369 s" in finding.message
    assert "measured in the field" in finding.message
    assert round(load_tax_s(GLM_BYTES, 1.1e9)) == 369
    assert STAGE in finding.fix


def test_a_staged_copy_is_read_locally() -> None:
    staged = NodeManifest(weights=StagedWeights(
        model="glm", repo="models--zai-org--GLM-5.2", revision="abc", folder="/nvme/hf/x",
        bytes=GLM_BYTES, files={"a": StagedFile(bytes=1, sha256="0" * 64, mtime=1.0)},
        source="spark1:/nas", verified_at=1.0))
    facts = with_weights(probe_tree("gb10-head"), "/root/.cache/huggingface/hub/models--z")
    check = check_weights_route(facts, ctx(staged=staged))
    assert check is not None and check.status == "ok"
    assert check.summary.startswith("reads weights locally: staged copy /nvme/hf/x")


def test_no_copy_on_the_node_names_the_stage_command() -> None:
    facts = with_weights(probe_tree("gb10-head"), "/data/none", exists=False)
    check = check_weights_route(facts, ctx())
    assert check is not None and check.status == "warning" and STAGE in check.findings[0].fix


def test_local_disk_is_local() -> None:
    facts = with_weights(probe_tree("gb10-head"), "/opt/models/glm")
    check = check_weights_route(facts, ctx())
    assert check is not None and check.status == "ok" and "locally" in check.summary


def test_weights_over_the_management_link_are_warned_of_once() -> None:
    facts = with_weights(probe_tree("gb10-head"), "/root/.cache/huggingface/hub/models--z")
    caches = check_caches(facts, ctx())
    route = check_weights_route(facts, ctx())
    warned = [c.check for c in [*caches, route] if c is not None for f in c.findings
              if "management" in f.message]
    assert warned == ["weights-route"]  # with the load tax per start
    # Without a recipe there is no weights-route check: the cache check says it.
    no_recipe = NodeContext(name="spark1")
    (hf,) = [c for c in check_caches(facts, no_recipe) if c.check == "hf-cache"]
    assert any("management link" in f.message for f in hf.findings)
