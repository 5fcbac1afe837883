"""Names and ssh targets from recipes and cluster files. They come from strangers and reach
shell scripts, file paths and the ssh command line, so they are checked at load, before any
plan exists: a name is a plain word, an ssh target is never an option and holds no space."""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit"


def check_name(value: str) -> str:
    """A recipe, profile, node, container or interface name: a plain word."""
    if not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name (allowed: {NAME_RULE})")
    return value


def ssh_word_problem(value: str) -> str | None:
    """Why an ssh target or user would be unsafe on ssh's command line, or None."""
    if not value:
        return "is empty"
    if value.startswith("-"):
        return "starts with '-' (ssh would take it as an option)"
    if any(c.isspace() or not c.isprintable() for c in value):
        return "holds whitespace or a control character"
    return None


def check_ssh_word(value: str) -> str:
    problem = ssh_word_problem(value)
    if problem:
        raise ValueError(f"{value!r} {problem}; give a host name, user@host or an ssh_config "
                         "alias")
    return value
