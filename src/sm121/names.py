"""Names, revisions, image references and ssh targets from recipes, cluster files and tune's
resume files. They come from strangers and reach shell scripts, file paths, docker's and ssh's
command lines, so they are checked at load, before any plan exists, each by the one validator
of its kind here (the schemas use them as typed fields): a name is a plain word, a revision is
one path segment, an ssh target or image is never an option and holds no space."""

from __future__ import annotations

import re

from sm121.display import quoted

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit"


def check_name(value: str) -> str:
    """A recipe, profile, node, container or interface name: a plain word."""
    if not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name (allowed: {NAME_RULE})")
    return value


# An arm of `sm121 tune` (a recipe profile's name, or one tune makes: `chunk-4096`, `kv-fp8`,
# `llama.cpp-defaults`) becomes part of file names in the tune's folder
# (`capacity/NAME-agents-N.json`) and is read back from its tune.json, a file someone may hand
# over: a profile name with a bound, so a file name built from it stays one short segment.
ARM_NAME_MAX = 100
ARM_NAME_RULE = f"{NAME_RULE}, at most {ARM_NAME_MAX} characters"


def check_arm_name(value: str) -> str:
    if len(value) > ARM_NAME_MAX or not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{quoted(value, 120)} is not an allowed arm name "
                         f"(allowed: {ARM_NAME_RULE})")
    return value


# A revision becomes one folder name (`snapshots/REVISION`, `refs/REVISION`): a single path
# segment, so never a `/`, never `..`, never an option.
REVISION_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
REVISION_RULE = ("a commit hash (40 hex digits) or a branch or tag word: letters, digits, "
                 "'.', '_' and '-', starting with a letter or digit, at most 128 characters, "
                 "no '/' and no '..'")


def check_revision(value: str) -> str:
    if not REVISION_PATTERN.fullmatch(value) or ".." in value:
        raise ValueError(f"{value!r} is not an allowed revision (allowed: {REVISION_RULE})")
    return value


# A docker image reference ([registry[:port]/]name[:tag][@sha256:digest]): it reaches
# `docker run`, `docker save` and `docker image inspect` as one argument.
IMAGE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}")
IMAGE_RULE = ("a docker image reference: letters, digits, '.', '_', '-', '/', ':' and '@', "
              "starting with a letter or digit, at most 255 characters")


def check_image(value: str) -> str:
    if not IMAGE_PATTERN.fullmatch(value) or ".." in value:
        raise ValueError(f"{value!r} is not an allowed image (allowed: {IMAGE_RULE})")
    return value


# An ssh target: `host`, `user@host` or an ssh_config alias. A host is a name, an IPv4 or an
# IPv6 address; a user a login name. Neither may start with `-` (ssh would read an option).
SSH_USER_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
SSH_HOST_PATTERN = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_.:%-]{0,252}")
SSH_RULE = ("host, user@host or an ssh_config alias: a user of letters, digits, '_', '.' "
            "and '-', a host of letters, digits, '_', '.', ':', '%' and '-', neither "
            "starting with '-'")


def ssh_word_problem(value: str) -> str | None:
    """Why an ssh target or user would be unsafe on ssh's command line, or None."""
    if not value:
        return "is empty"
    if value.startswith("-"):
        return "starts with '-' (ssh would take it as an option)"
    if any(c.isspace() or not c.isprintable() for c in value):
        return "holds whitespace or a control character"
    user, at, host = value.rpartition("@")
    if at and not SSH_USER_PATTERN.fullmatch(user):
        return f"has a user {user!r} that is not a login name"
    if not SSH_HOST_PATTERN.fullmatch(host):
        return f"has a host {host!r} that is not a host name or address"
    return None


def check_ssh_word(value: str) -> str:
    problem = ssh_word_problem(value)
    if problem:
        raise ValueError(f"{value!r} {problem} (allowed: {SSH_RULE})")
    return value


def check_ssh_user(value: str) -> str:
    if not SSH_USER_PATTERN.fullmatch(value):
        why = ("starts with '-' (ssh would take it as an option)" if value.startswith("-")
               else "is not a login name")
        raise ValueError(f"{value!r} {why} (allowed: letters, digits, '_', '.' and '-', "
                         "starting with a letter, digit or '_')")
    return value
