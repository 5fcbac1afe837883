"""The llama.cpp adapter: flags read from llama-server's --help, the rendered argv, the rules of
a recipe's args (one key per flag, sm121's own flags, the per-slot context), the allow-list
and the check of the rendered argv as llama-server's parser reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sm121.engines.llamacpp import flags as llama_flags
from sm121.engines.llamacpp import trust as llama_trust
from sm121.engines.llamacpp.args import per_slot_context
from sm121.errors import Sm121Error
from sm121.findings import Severity, errors
from sm121.plan.render import PlanRequest, render_plan
from sm121.plan.trust import trust_needs
from sm121.recipes.loader import load_recipe

HELP = """\
-c,    --ctx-size N                     size of the prompt context (default: 4096, 0 = loaded
                                        from model)
                                        (env: LLAMA_ARG_CTX_SIZE)
-kvu,  --kv-unified, -no-kvu, --no-kv-unified
                                        use single unified KV buffer shared across all sequences
                                        (env: LLAMA_ARG_KV_UNIFIED)
--no-mmap                               do not memory-map model
--lora-scaled FNAME SCALE               path to LoRA adapter with user defined scaling
"""


def test_the_help_is_read_into_options_with_spellings_values_and_env() -> None:
    book = llama_flags.parse_book(HELP, "b1")
    assert book.options["c"].spellings == ("-c", "--ctx-size")
    assert book.options["c"].values == 1 and book.options["c"].env == "LLAMA_ARG_CTX_SIZE"
    kvu = book.options["kvu"]
    assert kvu.negatives == ("-no-kvu", "--no-kv-unified") and kvu.values == 0
    assert kvu.env == "LLAMA_ARG_KV_UNIFIED"
    assert book.options["no-mmap"].values == 0  # itself a --no- option, not a negative
    assert book.options["lora-scaled"].values == 2
    assert book.option("ctx-size") is book.options["c"] and book.option("-no-kvu") is kvu


def test_the_bundled_help_has_the_flags_sm121_renders_and_allow_lists() -> None:
    book = llama_flags.book("b11434")
    assert book.version == "b11434"
    for key in ("c", "np", "kvu", "ctk", "ctv", "ngl", "b", "ub", "cache-reuse", "jinja",
                "metrics", "slots", "a", "m", "hf", "log-timestamps", "log-prefix"):
        assert key in book.options, key
    assert [k for k in llama_trust.SAFE if k not in book.options] == []
    assert llama_flags.release_of("version: 11434 (b11434)") == "b11434"


def test_tiny_llamacpp_renders_the_gguf_and_sm121s_own_flags() -> None:
    plan = render_plan(PlanRequest(recipe=load_recipe("tiny-llamacpp"), profile="agent",
                                   port=8123))
    argv = plan.head.argv
    assert argv[0] == "llama-server"
    assert argv[argv.index("-m") + 1].endswith("/models/tiny/tiny.gguf")
    assert argv[argv.index("-a") + 1] == "tiny"
    assert argv[argv.index("--port") + 1] == "8123"
    assert {"--metrics", "--slots", "--jinja"} <= set(argv)
    assert argv[argv.index("-np") + 1] == "4" and argv[argv.index("-c") + 1] == "65536"
    shared = render_plan(PlanRequest(recipe=load_recipe("tiny-llamacpp"), profile="shared"))
    assert "-kvu" in shared.head.argv
    off = render_plan(PlanRequest(recipe=load_recipe("tiny-llamacpp"), profile="agent",
                                  overrides={"kvu": False}))
    assert "-no-kvu" in off.head.argv  # a false boolean is its negative spelling


def test_the_playbook_recipe_pulls_its_gguf_by_repo_and_quant_tag() -> None:
    plan = render_plan(PlanRequest(recipe=load_recipe("qwen3.6-35b-a3b-llamacpp")))
    argv = plan.head.argv
    assert argv[argv.index("-hf") + 1] == "unsloth/Qwen3.6-35B-A3B-MTP-GGUF:UD-Q4_K_XL"
    mtp = render_plan(PlanRequest(recipe=load_recipe("qwen3.6-35b-a3b-llamacpp"),
                                  profile="agent-mtp")).head.argv
    assert mtp[mtp.index("--spec-type") + 1] == "draft-mtp"
    assert mtp[mtp.index("--spec-draft-n-max") + 1] == "3"


def test_np_4_on_the_playbook_recipe_warns_that_each_agent_gets_32768() -> None:
    plan = render_plan(PlanRequest(recipe=load_recipe("qwen3.6-35b-a3b-llamacpp"),
                                   overrides={"np": 4}))
    warned = [f for f in plan.findings if f.severity is Severity.WARNING and "np" in f.field]
    assert len(warned) == 1 and "each agent gets 32,768 tokens" in warned[0].message
    shared = render_plan(PlanRequest(recipe=load_recipe("qwen3.6-35b-a3b-llamacpp"),
                                     overrides={"np": 4, "kvu": True}))
    assert not [f for f in shared.findings if "each agent gets" in f.message]


@pytest.mark.parametrize("args,window", [
    ({"c": 131072, "np": 4}, 32768), ({"c": 131072, "np": 4, "kvu": True}, 131072),
    ({"c": 131072}, 131072), ({"c": 131072, "np": -1}, 131072), ({"np": 4}, None),
    ({"c": 0, "np": 2}, None),
])
def test_the_context_each_agent_gets(args: dict, window: int | None) -> None:
    assert per_slot_context(args) == window


def _recipe(tmp_path: Path, **args: object) -> str:
    data = load_recipe("tiny-llamacpp").recipe.model_dump(mode="json", exclude_defaults=True)
    data["args"].update(args)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_another_spelling_an_owned_flag_and_an_unknown_one_are_refused(tmp_path: Path) -> None:
    from sm121.plan.validate import validate_recipe

    loaded = load_recipe(_recipe(tmp_path, **{"ctx-size": 4096, "port": 9, "metrics": True,
                                              "n-gpu-layer": 3}))
    found = {f.field.split(".")[-1]: f.message for f in errors(validate_recipe(
        loaded.recipe, loaded.source))}
    assert "write it `c`" in found["ctx-size"]
    assert "--port" in found["port"] and "sm121" in found["metrics"]
    assert "not a flag of llama-server b11434" in found["n-gpu-layer"]


def test_a_foreign_recipe_needs_trust_for_files_and_endpoints_not_for_tuning(
        tmp_path: Path) -> None:
    tuning = load_recipe(_recipe(tmp_path, ctk="q8_0", kvu=True, ngl=99))
    assert trust_needs(tuning.recipe, "agent", tuning.builtin) == []
    risky = load_recipe(_recipe(tmp_path, **{"slot-save-path": "/tmp/x", "props": True,
                                             "ctk": "q3_evil"}))
    needs = "\n".join(trust_needs(risky.recipe, "agent", risky.builtin))
    assert "slot-save-path" in needs and "props" in needs and "ctk" in needs


def test_env_that_sets_a_flag_is_checked_as_that_flag() -> None:
    book = llama_flags.book("b11434")
    assert llama_trust.env_problem("LLAMA_ARG_CTX_SIZE", "4096", False, book) is None
    assert "needs --trust" in (llama_trust.env_problem("LLAMA_ARG_HF_REPO", "x/y", False, book)
                               or "")
    assert llama_trust.env_problem("LLAMA_API_KEY", "", True, book) is None
    assert llama_trust.env_problem("AWS_SECRET", "", True, book) is not None


def test_the_rendered_argv_is_read_as_llama_server_reads_it() -> None:
    book = llama_flags.book("b11434")
    own = ["-m", "x.gguf", "--port", "1", "--metrics"]
    assert llama_trust.argv_problems(own + ["-c", "4096", "-kvu"], own, book) == []
    sneaky = llama_trust.argv_problems(own + ["--slot-save-path", "/tmp"], own, book)
    assert sneaky and "--slot-save-path" in sneaky[0]
    assert "would not accept" in llama_trust.argv_problems(own + ["--nope"], own, book)[0]
    changed = llama_trust.argv_problems(own[:2] + ["--port", "2"] + own[4:], own, book)
    assert changed and "--port" in changed[0]


@pytest.mark.parametrize("tp", [1, 2])
def test_several_nodes_are_refused_with_the_reason(tmp_path: Path, tp: int) -> None:
    """One refusal, the engine's, whatever the ranks say (vLLM's tp x pp rule is not the
    question): validation, so plan, serve and tune refuse alike before anything starts."""
    data = load_recipe("tiny-llamacpp").recipe.model_dump(mode="json", exclude_defaults=True)
    data["parallelism"] = {"nodes": 2, "tp": tp}
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(Sm121Error) as raised:
        render_plan(PlanRequest(recipe=load_recipe(str(path)), profile="agent"))
    message = raised.value.message
    assert "(1 error)" in message and "parallelism.nodes: 2 nodes, but sm121 serves llama.cpp " \
        "on one node: llama.cpp spreads a model over machines only through its RPC backend" \
        in message


def test_a_llama_server_card_gives_its_per_slot_context() -> None:
    """llama-server's /v1/models card says one slot's context (meta.n_ctx), which connect and
    the gateway's context check take as the window; vLLM's says max_model_len."""
    from sm121.engines.client import max_model_len
    from sm121.engines.model_card import card_context

    card = {"id": "tiny", "meta": {"n_ctx": 16384, "n_ctx_train": 131072}}
    assert card_context(card) == 16384
    assert card_context({"id": "x", "max_model_len": 4096}) == 4096
    assert card_context({"id": "x", "meta": {"n_ctx": True}}) is None
    assert max_model_len({"data": [card]}, "tiny") == 16384


def test_a_stream_without_token_ids_is_counted_by_its_logprobs_entries() -> None:
    """One logprobs entry per sampled token (chat: content; completions: tokens); with
    neither, a chunk with text is refused, never counted as one token."""
    from sm121.protocols.token_ids import chunk_tokens

    entry = {"id": 7, "token": "a", "logprob": -1.0}
    chat = {"choices": [{"delta": {"content": "ab"}, "logprobs": {"content": [entry, entry]}}]}
    assert chunk_tokens(chat) == 2
    done = {"choices": [{"text": "x", "logprobs": {"tokens": ["x"]}}]}
    assert chunk_tokens(done) == 1
    with pytest.raises(Sm121Error):
        chunk_tokens({"choices": [{"delta": {"content": "ab"}}]})
    # llama-server's running count (timings_per_token): 3 tokens merged into one chunk.
    merged = {"choices": [{"delta": {"content": "\ufffdLM"}}], "timings": {"predicted_n": 5}}
    assert chunk_tokens(merged, counted=2) == 3
    final = {"choices": [], "usage": {"completion_tokens": 7}, "timings": {"predicted_n": 7}}
    assert chunk_tokens(final, counted=5) == 2  # a last character's tokens, sent in no chunk
