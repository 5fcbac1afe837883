"""Every `sm121 ...` command and every `--flag` that README.md and docs/*.md name exists.

The docs are read as a reader reads them: shell code blocks line by line (a `|`, `;`, `&&`
or `$(` with spaces around starts another program; `#` starts a comment) and inline code
spans. A command's path (`sm121 bench agents`) must be one `sm121 ... --help` answers, and
each flag after it must be in that command's `--help` (typer's CliRunner on the real app, in
this process). Placeholders are upper-case words (RUN, NAME, URL); `a|b` names alternatives,
and an option whose value the docs spell as `--opt a|b|c` must offer each of them (its
choices, or its help text). A long flag the docs name outside an sm121 command (`serve
--gateway`, `--supervise`) must be an option of some sm121 command, a flag of a bundled vLLM
release (sm121 reads those lists itself), or one of the few other tools' flags below; a
lone short flag (`tar -h`) says too little to check.

The recipe table in README.md lists every built-in recipe with its real profiles, read from
the loader."""

from __future__ import annotations

import functools
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import invoke_cli
from typer.testing import CliRunner

from sm121.cli.main import app
from sm121.engines.registry import adapters
from sm121.recipes.loader import builtin_names, load_recipe

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Flags the docs name that belong to other programs, by program. Only for spans that show no
# command of their own; a shell line of another program (docker, rsync, curl) is not checked.
OTHER_TOOLS: dict[str, set[str]] = {
    # SGLang's launch_server, in docs/engines.md's walk through a second engine
    "sglang": {"--model-path", "--tp-size", "--pp-size", "--nnodes", "--node-rank",
               "--dist-init-addr", "--mem-fraction-static"},
    # rsync's resume folder and docker run's device options (README: stage, clusters)
    "rsync": {"--partial-dir"},
    "docker": {"--gpus", "--ipc", "--network", "--device"},
    # aider's own options, in docs/connect.md's aider section
    "aider": {"--openai-api-base", "--openai-api-key", "--no-show-model-warnings",
              "--model-metadata-file", "--model-settings-file"},
    # the anchors' options, in docs/tune.md's table of how other tools search
    "vllm bench sweep": {"--num-runs"},
    "aiperf": {"--goodput"},
    "guidellm": {"--rate-type"},
    # benchmarks/gateway_overhead.py, a script beside the package (README: gateway)
    "gateway_overhead.py": {"--upstream-url"},
}
OTHER_FLAGS = {flag for flags in OTHER_TOOLS.values() for flag in flags}

SHELL_FENCES = {"", "bash", "sh", "shell", "console"}
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.\.\.)?")
FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9-]*")
SEPARATORS = re.compile(r"\s(?:\||;|&&|&)\s|\$\(|`")


@dataclass(frozen=True)
class Mention:
    doc: str
    line: int
    text: str  # the command or span as the docs spell it

    def where(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def _fenced_and_inline(name: str, markdown: str) -> tuple[list[Mention], list[Mention]]:
    """Segments of shell code blocks (one program each) and inline code spans."""
    segments: list[Mention] = []
    prose: list[tuple[int, str]] = []
    fence: str | None = None
    pending = ""
    for number, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip().lower()
            continue
        if fence is None:
            prose.append((number, line))
            continue
        if fence not in SHELL_FENCES:
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):  # a continued line: one command
            pending = pending[:-1] + " "
            continue
        text, pending = " ".join(_without_comment(pending).split()), ""
        segments += [Mention(name, number, part.strip()) for part in SEPARATORS.split(text)
                     if part.strip()]
    spans: list[Mention] = []
    # An inline span may wrap onto the next line of its paragraph.
    text = "\n".join(line for _, line in prose)
    starts = [0]
    for _, line in prose:
        starts.append(starts[-1] + len(line) + 1)
    for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
        index = next(i for i, start in enumerate(starts) if start > match.start()) - 1
        spans.append(Mention(name, prose[index][0], " ".join(match.group(1).split())))
    return segments, spans


def _without_comment(line: str) -> str:
    """The line up to a `#` that starts a word outside quotes (a shell comment)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _words(text: str) -> list[str]:
    try:
        words = shlex.split(text.replace("\\|", "|"))
    except ValueError:  # an unbalanced quote in a span: read it by whitespace
        words = text.replace("\\|", "|").split()
    return [w.strip("[](){},.:") for w in words if w.strip("[](){},.:")]


def _program(words: list[str]) -> list[str] | None:
    """The words after `sm121` when the segment runs sm121 (after VAR=value assignments)."""
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words = words[1:]
    if words and words[0].rsplit("/", 1)[-1] == "sm121":
        return words[1:]
    return None


@functools.cache
def _root():  # type: ignore[no-untyped-def]
    import typer

    return typer.main.get_command(app)


def _subcommands(command: object) -> dict[str, object]:
    return dict(getattr(command, "commands", None) or {})


@functools.cache
def _help(path: tuple[str, ...]) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
    return result.exit_code, result.output


def _options(path: tuple[str, ...]) -> dict[str, object]:
    """A command's options by every name they answer to, as click knows them."""
    command = _root()
    for name in path:
        command = _subcommands(command)[name]
    found: dict[str, object] = {}
    for param in getattr(command, "params", []):
        for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
            if opt.startswith("-"):
                found[opt] = param
    return found


@functools.cache
def _every_sm121_flag() -> frozenset[str]:
    flags: set[str] = set()

    def walk(command: object, path: tuple[str, ...]) -> None:
        flags.update(_options(path))
        for name, sub in _subcommands(command).items():
            walk(sub, (*path, name))

    walk(_root(), ())
    return frozenset(flags)


@functools.cache
def _engine_flags() -> frozenset[str]:
    return frozenset(f"--{flag}" for adapter in adapters()
                     for version in adapter.bundled_versions()
                     for flag in adapter.bundled_flags(version).flags)


@dataclass
class Check:
    path: tuple[str, ...]
    flags: list[tuple[str, list[str]]]  # flag, the alternatives the docs give as its value
    problem: str | None = None


def _resolve(words: list[str]) -> Check:
    """Walk the words down the command tree; the flags after the path, with their values."""
    command: object = _root()
    path: tuple[str, ...] = ()
    i = 0
    while i < len(words) and _subcommands(command):
        word = words[i]
        if word in _subcommands(command):
            command, path, i = _subcommands(command)[word], (*path, word), i + 1
            continue
        if not word.startswith("-") and not PLACEHOLDER.fullmatch(word) and word != "...":
            return Check(path, [], f"`sm121 {' '.join((*path, word))}`: no such command")
        break
    flags: list[tuple[str, list[str]]] = []
    for j, word in enumerate(words[i:], start=i):
        for alternative in word.split("|"):
            name = alternative.split("=", 1)[0]
            if FLAG.fullmatch(name):
                value = words[j + 1] if j + 1 < len(words) and "|" not in word else ""
                choices = value.split("|") if "|" in value else []
                flags.append((name, choices))
    return Check(path, flags)


def _problems_of_command(mention: Mention, words: list[str]) -> list[str]:
    check = _resolve(words)
    if check.problem:
        return [f"{mention.where()}\n    {check.problem}"]
    code, help_text = _help(check.path)
    shown = "sm121 " + " ".join(check.path)
    if code != 0:
        return [f"{mention.where()}\n    `{shown} --help` exited {code}"]
    candidates = [check.path]
    if _subcommands(_root_at(check.path)) and not _options(check.path).keys() - {"--help"}:
        # `sm121 bench SCENARIO --url URL`: a flag of the group's commands
        candidates = [(*check.path, name) for name in _subcommands(_root_at(check.path))]
    problems = []
    for flag, choices in check.flags:
        owners = [path for path in candidates if flag in _options(path)
                  and re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", _help(path)[1])]
        if not owners:
            problems.append(f"{mention.where()}\n    {flag} is not in `{shown} --help`")
            continue
        offered = _option_help(_help(owners[0])[1], flag)
        for choice in choices:
            if choice and not PLACEHOLDER.fullmatch(choice) and not re.search(
                    rf"(?<![\w-]){re.escape(choice)}(?![\w-])", offered):
                problems.append(f"{mention.where()}\n    {flag} {choice}: not a value "
                                f"`{shown} --help` offers: {' '.join(offered.split())}")
    return problems


def _option_help(help_text: str, flag: str) -> str:
    """The rows of one option in rich's help table: its names, metavar (`<a|b|c>` for a
    choice) and help, up to the next option's row."""
    rows: list[str] = []
    for line in help_text.splitlines():
        cell = line.strip("│ \t")
        starts_option = bool(re.match(r"(\*\s+)?-", cell))
        if rows and (starts_option or not cell or line.lstrip().startswith("╰")):
            break
        if rows or (starts_option and re.search(
                rf"(?<![\w-]){re.escape(flag)}(?![\w-])", cell.split("<")[0])):
            rows.append(cell)
    return " ".join(rows)


def _root_at(path: tuple[str, ...]) -> object:
    command = _root()
    for name in path:
        command = _subcommands(command)[name]
    return command


def _problems_of_span(mention: Mention) -> list[str]:
    words = _words(mention.text)
    rest = _program(words)
    if rest is not None:
        return _problems_of_command(mention, rest)
    # `serve --gateway`, `bench ab ... --scenario agents`: a command named without `sm121`
    if len(words) > 1 and words[0] in _subcommands(_root()) and (
            words[1].startswith("-") or words[1] in _subcommands(_subcommands(_root())[words[0]])
            or words[1] == "..."):
        return _problems_of_command(mention, words)
    if not words or not words[0].startswith("-"):
        return []  # another program's command line (`ray start --head`), or prose
    known = _every_sm121_flag() | _engine_flags() | OTHER_FLAGS
    return [f"{mention.where()}\n    {word}: neither an sm121 option, a vLLM flag nor one of "
            "OTHER_TOOLS" for word in words
            if word.startswith("--") and FLAG.fullmatch(name := word.split("=", 1)[0])
            and not name[2:].isupper()
            and name not in known and word not in OTHER_FLAGS]


def _mentions() -> tuple[list[Mention], list[Mention]]:
    segments: list[Mention] = []
    spans: list[Mention] = []
    for path in DOCS:
        fenced, inline = _fenced_and_inline(path.relative_to(ROOT).as_posix(), path.read_text())
        segments += fenced
        spans += inline
    return segments, spans


def test_every_sm121_command_and_flag_the_docs_name_exists() -> None:
    segments, spans = _mentions()
    problems: list[str] = []
    commands = 0
    for mention in segments:
        rest = _program(_words(mention.text))
        if rest is not None:
            commands += 1
            problems += _problems_of_command(mention, rest)
    for mention in spans:
        problems += _problems_of_span(mention)
    assert commands > 50, f"only {commands} sm121 commands found in the docs' code blocks"
    assert not problems, "\n".join(problems)


def test_the_docs_reader_finds_commands_flags_and_mistakes() -> None:
    """The checker itself: a wrong command, flag and value are each caught."""
    mention = Mention("doc.md", 1, "x")
    assert _problems_of_command(mention, ["bench", "agents", "--url", "URL", "--api",
                                          "chat|messages|responses|completions"]) == []
    assert _problems_of_command(mention, ["stop", "RUN|--all"]) == []
    assert "no such command" in _problems_of_command(mention, ["bench", "agnets"])[0]
    assert "--nope is not in" in _problems_of_command(mention, ["serve", "NAME", "--nope"])[0]
    assert "not a value" in _problems_of_command(
        mention, ["connect", "URL", "--agent", "claude-code|cursor"])[0]
    assert "flag" not in " ".join(_problems_of_span(Mention("d", 1, "--enable-auto-tool-choice")))
    assert _problems_of_span(Mention("d", 1, "--no-such-flag"))
    segments, _ = _fenced_and_inline("doc.md", "```bash\nsm121 plan NAME \\\n  --json  # a comment\n"
                                          "curl -s URL | grep x\n```\n")
    assert [m.text for m in segments] == ["sm121 plan NAME --json", "curl -s URL", "grep x"]


def _recipe_table() -> dict[str, str]:
    """README's recipe table: recipe name(s) -> the row's text."""
    rows: dict[str, str] = {}
    text = (ROOT / "README.md").read_text()
    table = text.split("| recipe |", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[-1]
    return rows


@pytest.mark.parametrize("name", builtin_names())
def test_readme_recipe_table_lists_each_builtin_recipe_with_its_profiles(name: str) -> None:
    rows = _recipe_table()
    assert name in rows, f"README's recipe table leaves out {name}"
    profiles = list(load_recipe(name).recipe.profiles)
    named = re.findall(r"`([a-z0-9-]+)`", rows[name])
    if profiles:
        assert sorted(named) == sorted(profiles), (name, named, profiles)
    else:
        assert "no profiles" in rows[name], f"{name} has no profiles; its row should say so"


def test_readme_says_truly_which_builtin_profiles_have_six_sequences() -> None:
    """README's recipe table and its "N agents" section say so: every profile has
    max-num-seqs 6 but laguna-s-2.1's, which set none (vLLM's default); a profile with
    another max-num-seqs must change both."""
    text = (ROOT / "README.md").read_text()
    assert ("every vLLM profile here\nhas max-num-seqs 6 but laguna-s-2.1's, which leave it to vLLM, "
            "and qwen3.6-35b-a3b-vllm's") in text
    # llama.cpp's recipes have slots (np), not max-num-seqs; NVIDIA's playbook pins 4 for
    # its vLLM recipe of Qwen3.6-35B-A3B (the README's table names both apart).
    apart = {"qwen3.6-35b-a3b-vllm"}
    seqs = {(name, profile): args.get("max-num-seqs")
            for name in builtin_names()
            if name not in apart and load_recipe(name).recipe.engine.kind.value == "vllm"
            for profile, args in ((p, dict(v.args))
                                  for p, v in load_recipe(name).recipe.profiles.items())}
    unset = {key for key, value in seqs.items() if value is None}
    assert {name for name, _ in unset} == {"laguna-s-2.1"}, seqs
    assert {value for key, value in seqs.items() if key not in unset} == {6}, seqs


def test_readme_small_model_recipe_validates_and_plans(tmp_path: Path) -> None:
    """The real small-model recipe the quick start shows is a valid recipe: `sm121 plan` on
    the file renders the engine's argv with its tool-calling flags and needs no --trust."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S)
                 if b.startswith("# qwen-coder-cpu.yaml"))
    path = tmp_path / "qwen-coder-cpu.yaml"
    path.write_text(block)
    plan = json.loads(invoke_cli("plan", str(path), "--profile", "agent", "--json").stdout)
    argv = " ".join(plan["nodes"][0]["argv"])
    assert "--enable-auto-tool-choice" in argv and "--tool-call-parser=hermes" in argv
    assert "Qwen/Qwen2.5-Coder-1.5B-Instruct" in argv and "--max-num-seqs=3" in argv
    assert plan["needs_trust"] == [], plan["needs_trust"]
