"""The pure parts of `sm121 stage`: the layout of a staged model, parsing find/sha256sum/rsync
and tar output, the commands rendered for a copy, the manifest's mismatch rule and the
copy-tool choice."""

from __future__ import annotations

import shlex

import pytest

from sm121.errors import Sm121Error
from sm121.paths import expand_home
from sm121.recipes.schema import Recipe
from sm121.stage.files import FileEntry, parse_listing, parse_sums
from sm121.stage.images import save_load_script, streamed_bytes
from sm121.stage.layout import ModelKey, manifest_path, model_key, ref_file, snapshot_folder
from sm121.stage.manifest import mismatches, weights_entry
from sm121.stage.tools import copy_method
from sm121.stage.transfer import Endpoint, bytes_sent, rsync_script, tar_script

HOP = ["ssh", "-o", "BatchMode=yes", "-F", "/cfg dir/ssh_config"]


def recipe(**model: object) -> Recipe:
    return Recipe.model_validate({"name": "r", "model": {"id": "m", **model}})


def test_an_hf_model_is_staged_in_the_hf_cache_layout_at_its_revision() -> None:
    key = model_key(recipe(hf_id="zai-org/GLM-5.2", revision="main"), "abc123")
    assert snapshot_folder("/n/hf", key) == "/n/hf/hub/models--zai-org--GLM-5.2/snapshots/abc123"
    assert manifest_path("/n/hf", key) == "/n/hf/sm121-stage/models--zai-org--GLM-5.2@abc123.json"


def test_a_path_model_is_staged_under_a_local_repo_name() -> None:
    key = model_key(recipe(source="path", path="$SM121_HOME/models/llama-8b"))
    assert key.repo == "models--sm121-local--llama-8b" and key.revision == "local"


def test_tilde_is_the_nodes_home() -> None:
    assert expand_home("~/.cache/huggingface", "/home/u") == "/home/u/.cache/huggingface"
    assert expand_home("/data/hf", "/home/u") == "/data/hf"
    assert expand_home("~", "/") == "/" and expand_home("~/x", "/") == "/x"  # root's home
    assert expand_home("~/x", None) == "~/x"  # unknown yet: expanded at launch


def test_listing_and_sums_parse() -> None:
    listing = parse_listing("10 1700000000.5 a.safetensors\0" "3 1.0 sub dir/x y\0")
    assert listing == {"a.safetensors": FileEntry(10, 1700000000.5),
                       "sub dir/x y": FileEntry(3, 1.0)}
    digest = "ab" * 32
    assert parse_sums(f"{digest}  ./a b.safetensors\nnoise\n") == {"a b.safetensors": digest}


def test_rsync_between_nodes_resumes_and_goes_to_the_fabric_address() -> None:
    script = rsync_script(Endpoint("spark1", "/src/m", "u@10.0.0.1", False),
                          Endpoint("spark2", "/dst/it's", "u@10.0.0.2", False), HOP)
    argv = shlex.split(script)
    assert argv[0] == "rsync" and "--partial" in argv and "--partial-dir=.sm121-partial" in argv
    assert "-L" in argv and "--protect-args" in argv and "--stats" in argv
    assert argv[argv.index("-e") + 1] == shlex.join(HOP)
    assert argv[-3:] == ["--", "/src/m/", "u@10.0.0.2:/dst/it's/"]


def test_a_copy_on_one_node_uses_paths_not_ssh() -> None:
    argv = shlex.split(rsync_script(Endpoint("spark1", "/nas/m", "a", False),
                                    Endpoint("spark1", "/nvme/m", "a", False), HOP))
    assert "-e" not in argv and argv[-1] == "/nvme/m/"


def test_tar_streams_into_ssh_with_the_names_quoted() -> None:
    script = tar_script(Endpoint("spark1", "/src", None, False),
                        Endpoint("spark2", "/dst", "10.0.0.2", False), ["a b", "-x"], HOP)
    create, extract = script.split(" | ")
    assert shlex.split(create)[-3:] == ["--", "a b", "-x"]
    remote = shlex.split(extract)
    assert remote[:len(HOP)] == HOP and remote[len(HOP):len(HOP) + 2] == ["--", "10.0.0.2"]
    assert shlex.split(remote[-1])[-1] == "/dst"


def test_bytes_sent_are_read_from_rsync_and_tar() -> None:
    assert bytes_sent("rsync", "Number of files: 3\nTotal bytes sent: 1,234,567\n", "") == 1234567
    assert bytes_sent("tar", "", "Total bytes written: 20480 (20KiB, 1MiB/s)\n") == 20480
    assert bytes_sent("rsync", "", "") is None


def test_a_manifest_matches_only_unchanged_files_with_the_sources_sums() -> None:
    files = {"a": FileEntry(1, 5.0), "b": FileEntry(2, 6.0)}
    sums = {"a": "1" * 64, "b": "2" * 64}
    entry = weights_entry(model_key(recipe(source="path", path="/m")), "/f", files, sums, "s")
    assert mismatches(entry, sums, files) == []
    assert mismatches(entry, sums | {"b": "3" * 64}, files) == ["b"]
    assert mismatches(entry, sums, {"a": FileEntry(1, 7.0), "b": files["b"]}) == ["a"]
    assert mismatches(entry, sums, {"a": files["a"]}) == ["b"]
    assert mismatches(entry, sums, None) == ["a", "b"]


@pytest.mark.parametrize(("sender", "target", "wanted", "method"), [
    ({"rsync"}, {"rsync"}, "auto", "rsync"), ({"rsync"}, set(), "auto", "tar"),
    ({"rsync"}, {"rsync"}, "tar", "tar"), (set(), {"rsync"}, "rsync", "missing")])
def test_rsync_needs_both_ends(sender: set[str], target: set[str], wanted: str,
                               method: str) -> None:
    assert copy_method(sender, target, wanted) == method


def test_an_image_streams_through_dd_whose_last_count_is_the_bytes_sent() -> None:
    script = save_load_script("vllm/vllm-openai:v1", "u@10.0.0.2", HOP)
    save, count, load = script.split(" | ")
    assert shlex.split(save) == ["docker", "save", "vllm/vllm-openai:v1"]
    assert count.startswith("dd ") and "status=progress" in count
    assert shlex.split(load)[-3:] == ["--", "u@10.0.0.2", "docker load"]
    progress = ("4194304 bytes (4.2 MB, 4.0 MiB) copied, 1 s, 4.2 MB/s\r"
                "8388608 bytes (8.4 MB, 8.0 MiB) copied, 2 s, 4.2 MB/s\r"
                "2+1 records in\n2+1 records out\n9000000 bytes (9.0 MB) copied, 2.1 s\n")
    assert streamed_bytes(progress) == 9_000_000
    assert streamed_bytes("") == 0


@pytest.mark.parametrize("revision", ["../x", "a/b", "..", "-x", "a\nb", ""])
def test_a_revision_read_from_a_node_is_checked_where_the_key_is_made(revision: str) -> None:
    # An HF model's commit comes from the node's refs/ file: the key refuses it as a folder.
    with pytest.raises(Sm121Error, match="revision"):
        ModelKey("models--org--m", revision, "m")


def test_a_ref_file_stays_under_refs() -> None:
    key = ModelKey("models--org--m", "0" * 40, "m")
    assert ref_file("/hf", key, "main") == "/hf/hub/models--org--m/refs/main"
    with pytest.raises(ValueError, match="revision"):
        ref_file("/hf", key, "../../../../etc/cron.d/x")
