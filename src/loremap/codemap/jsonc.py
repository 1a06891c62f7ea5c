"""JSON with comments and trailing commas, as tsconfig.json and jsconfig.json are written.

TypeScript reads its configuration with a lenient parser, so real tsconfig files carry `//` and
`/* */` comments and trailing commas that `json.loads` rejects. The resolver reads every JSON
configuration file (package.json, composer.json, tsconfig) through `loads_jsonc`: strict JSON
first, and only when that fails a pass that blanks comments and drops trailing commas.
"""

from __future__ import annotations

import json


def _skip_blank(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def loads_jsonc(text: str) -> object:
    """JSON with `//` and `/* */` comments and trailing commas (tsconfig.json); None when
    malformed."""
    text = text.lstrip("\ufeff")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif ch in " \t\r\n/":
            j = _skip_blank(text, i)
            out.append(" " if j > i else ch)
            i = max(j, i + 1)
        elif ch == ",":
            j = _skip_blank(text, i + 1)
            if j >= n or text[j] not in "}]":
                out.append(",")
            i = j
        else:
            out.append(ch)
            i += 1
    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError):
        return None
