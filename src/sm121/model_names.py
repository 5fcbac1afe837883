"""The served-model-name rule: what a client may call a model. A recipe's `model.id` and
aliases are checked against it at load; `sm121 connect` checks an endpoint's model ids
against it before printing one into a shell line or a config file. The rule is a plain word
(no space, quote, `$`, backquote, `;` or newline), so a name is the same word in a shell,
TOML, JSON and a URL path."""

from __future__ import annotations

import re

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")
MODEL_NAME_RULE = ("a letter or digit, then up to 127 letters, digits and . _ : / - "
                   "(no space, quote, $, backquote, ; or newline)")


def is_model_name(value: object) -> bool:
    return isinstance(value, str) and MODEL_NAME_PATTERN.fullmatch(value) is not None
