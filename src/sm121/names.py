"""Names, revisions, image references and ssh targets from recipes, cluster files and tune's
resume files. They come from strangers and reach shell scripts, file paths, docker's and ssh's
command lines, so they are checked at load, before any plan exists, each by the one validator
of its kind here (the schemas use them as typed fields): a name is a plain word, a profile
name one of at most 100 characters, a revision is one path segment, an ssh target or image is
never an option and holds no space."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from sm121.display import quoted

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit"


def check_name(value: str) -> str:
    """A recipe, node, container or interface name: a plain word (a profile's is
    bounded too: `check_profile_name`)."""
    if not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name (allowed: {NAME_RULE})")
    return value


# A recipe profile's name, and an arm of `sm121 tune` (a recipe profile, or a variant tune
# makes and may write as one: `chunk-4096`, `kv-fp8`, `llama.cpp-defaults`): one type, checked
# where a recipe is loaded and where tune.json or an A/B's results file is read back (files a
# stranger may hand over). It becomes part of file names (`capacity/NAME-agents-N.json`,
# `ab-agents/NAME-rep1.json`), so it is a plain word with a bound: a file name built from it
# stays one short segment.
PROFILE_NAME_MAX = 100
PROFILE_NAME_RULE = f"{NAME_RULE}, at most {PROFILE_NAME_MAX} characters"


def check_profile_name(value: str) -> str:
    if len(value) > PROFILE_NAME_MAX or not NAME_PATTERN.fullmatch(value):
        raise ValueError(f"{quoted(value, 120)} is not an allowed profile name "
                         f"(allowed: {PROFILE_NAME_RULE})")
    return value


ProfileName = Annotated[str, AfterValidator(check_profile_name)]

# What an A/B measures, as its results file names it: a profile's name, or for an A/B across
# recipes (`bench ab tiny-cpu:agent,tiny-llamacpp:agent`) RECIPE:PROFILE, each side such
# a name. It names the A/B's files (`ab-agents/NAME-rep1.json`) and reaches every report.
AB_PROFILE_RULE = f"a profile name ({PROFILE_NAME_RULE}), or RECIPE:PROFILE, two such names"


def check_ab_profile(value: str) -> str:
    recipe, colon, profile = value.rpartition(":")
    if not colon:
        return check_profile_name(value)
    try:
        check_profile_name(recipe)
        check_profile_name(profile)
    except ValueError:
        raise ValueError(f"{quoted(value, 120)} is not an allowed A/B profile "
                         f"(allowed: {AB_PROFILE_RULE})") from None
    return value


AbProfile = Annotated[str, AfterValidator(check_ab_profile)]


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
