"""How a recalled item reads, and packing items into a token budget.

```
[gotcha] Coupon applied twice — .loremap/notes/gotcha-coupon-applied-twice.md
  files: src/discount/coupon.ts · ⚠ src/discount/coupon.ts changed since this note (2 commits)
  The discount ran before the total was recalculated.
  why: named in the question · linked to src/discount/coupon.ts
[file] src/discount/coupon.ts — module src/discount
  applyCoupon (function, line 12), removeCoupon (function, line 40)
  why: linked to "Coupon applied twice"
```
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from loremap.model.code import KIND_ORDER
from loremap.text import estimate_tokens

SNIPPET_CHARS = 240
DEFINITIONS = 8  # definitions a file item lists at most


class Item(NamedTuple):
    """One recalled node: what it is, where it lives, why it is here, and how it reads."""

    id: str
    kind: str  # note, file, module
    type: str  # the note type ("" for code)
    title: str
    path: str  # the note file, or the code path
    status: str
    scope: str  # project or personal
    score: float  # fused score, higher is better
    why: tuple[str, ...]
    snippet: str
    details: tuple[str, ...]  # files of a note; definitions of a file
    stale: tuple[str, ...] = ()  # "<file> changed since this note (N commits)"
    superseded_by: str | None = None
    text: str = ""
    tokens: int = 0
    # The candidate lists that placed it (bm25, entities, ppr, vectors, ...), each with its
    # rank there: not part of `text` (the agent never pays for it), shown by the dashboard.
    lists: tuple[tuple[str, int], ...] = ()

    @property
    def target(self) -> str:
        """What evaluation compares with gold ids: the note id or the code path."""
        return self.id


def snippet(body: str, limit: int = SNIPPET_CHARS) -> str:
    """The first paragraph of `body` that is not a heading, on one line, at most `limit`."""
    for para in body.split("\n\n"):
        text = " ".join(para.split())
        if text and not text.startswith("#"):
            return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return ""


def file_snippet(body: str, limit: int = 160) -> str:
    """A code file's line: its docstring, or else its latest commit subjects, one after the
    other with " · " between them (a file's body is its one-line docstring, then a paragraph of
    commit subjects, one per line)."""
    first = body.split("\n\n", 1)[0]
    lines = [" ".join(line.split()) for line in first.splitlines()]
    text = " · ".join(line for line in lines if line)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def definitions(defs: Sequence[tuple[str, str, int]], named: Collection[str],
                terms: Mapping[str, int], terms_of: Callable[[str], Iterable[str]],
                limit: int = DEFINITIONS) -> tuple[str, ...]:
    """The definitions a file item lists, `limit` at most, best first: those the question
    names (with kind and line); those whose name holds the question's `terms` (term -> its
    document count: more terms first, then the rarer); then the others, public before private
    (`_name`), then by kind (types, functions, methods, constants) and line. Only the named
    ones say kind and line, so an item costs what it did when it listed its first names. A
    name defined twice is listed once."""
    ranked = []
    for order, (name, kind, line) in enumerate(defs):
        held = [terms[t] for t in set(terms_of(name)) if t in terms]
        group = 0 if name in named else 1 if held else 2
        ranked.append(((group, -len(held), min(held, default=0), name.startswith("_"),
                        KIND_ORDER.get(kind, 9), order), name, kind, line))
    ranked.sort()
    shown: dict[str, str] = {}
    for (group, *_), name, kind, line in ranked:
        if len(shown) >= limit:
            break
        if name not in shown:
            shown[name] = f"{name} ({kind}, line {line})" if group == 0 else name
    return tuple(shown.values())


def render(item: Item) -> Item:
    """`item` with its text and token estimate filled in."""
    if item.kind == "note":
        flag = ""
        if item.status == "superseded":
            flag = (f" [superseded by {item.superseded_by}]" if item.superseded_by
                    else " [superseded]")
        elif item.status != "active":
            flag = f" [{item.status}]"
        personal = " (personal)" if item.scope == "personal" else ""
        lines = [f"[{item.type}] {item.title}{flag}{personal} — {item.path}"]
        extra = []
        if item.details:
            extra.append("files: " + ", ".join(item.details))
        extra += [f"⚠ {s}" for s in item.stale]
        if extra:
            lines.append("  " + " · ".join(extra))
    else:
        lines = [f"[{item.kind}] {item.title}"]
        if item.details:
            lines.append("  " + ", ".join(item.details))
    if item.snippet:
        lines.append("  " + item.snippet)
    if item.why:
        lines.append("  why: " + " · ".join(item.why))
    text = "\n".join(lines)
    return item._replace(text=text, tokens=estimate_tokens(text) + 1)


class Packed(NamedTuple):
    items: list[Item]
    tokens: int
    left_out: int  # items that did not fit


def pack(items: Iterable[Item], budget: int | None, limit: int) -> Packed:
    """The best items whose texts fit in `budget` tokens together, at most `limit` of them.

    An item too large for what is left is skipped and smaller ones after it still get in: the
    budget is spent on what fits, in rank order. `items` may be lazy: no item after the last
    one needed is built. `left_out` counts the items a larger budget would have added.
    """
    chosen: list[Item] = []
    used = 0
    left_out = 0
    for item in items:
        if len(chosen) >= limit:
            break
        if budget is not None and used + item.tokens > budget:
            left_out += 1
            continue
        chosen.append(item)
        used += item.tokens
    # A larger budget would show at most `limit` items: no more than that are "left out".
    return Packed(chosen, used, min(left_out, limit - len(chosen)))
