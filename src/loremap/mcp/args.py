"""The tools' arguments as typed records, parsed once where `Tool.check` has validated them.

Each record's fields are exactly its tool's schema properties (`tests/test_mcp.py` checks the
two agree), so a renamed schema key fails a test instead of being read as empty, and the tool
functions read attributes, never `args.get("...")`. Values are already valid JSON of the
schema's types; the vocabularies (kinds, note types, relations) become the model's enums here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from loremap.memory.drafts import Draft
from loremap.model import NodeKind, NoteType


class RecallArgs(NamedTuple):
    query: str
    terms: tuple[str, ...] = ()
    kind: NodeKind | None = None
    types: tuple[NoteType, ...] = ()
    files: tuple[str, ...] = ()
    budget: int | None = None
    as_of: str | None = None
    history: bool = False


class RememberArgs(NamedTuple):
    facts: tuple[Draft, ...]
    personal: bool = False


class ReadArgs(NamedTuple):
    target: str


class MapArgs(NamedTuple):
    module: str = ""


class HandoffArgs(NamedTuple):
    action: str
    goal: str = ""
    state: str = ""
    decisions: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    id: str | None = None


class ForgetArgs(NamedTuple):
    id: str
    reason: str | None = None
    purge: bool = False
    erase: bool = False


class OutcomeArgs(NamedTuple):
    id: str
    result: str  # success | failure
    note: str | None = None


class VerifyArgs(NamedTuple):
    claim: str


class RelatedArgs(NamedTuple):
    target: str
    limit: int = 50


class TimelineArgs(NamedTuple):
    since: str | None = None
    commits: int = 10


class StatsArgs(NamedTuple):
    pass


# The tools `tools.call` runs under the project's lock; `verify` is the server's own (it may
# ask the client's model, outside the lock: `server._verify`).
LockedArgs = (RecallArgs | RememberArgs | ReadArgs | MapArgs | HandoffArgs | ForgetArgs
              | OutcomeArgs | RelatedArgs | TimelineArgs | StatsArgs)
ToolArgs = LockedArgs | VerifyArgs
Raw = Mapping[str, Any]


def _strings(raw: Raw, key: str) -> tuple[str, ...]:
    return tuple(raw.get(key) or ())


def _recall(raw: Raw) -> RecallArgs:
    return RecallArgs(raw["query"], _strings(raw, "terms"),
                      NodeKind.parse(raw["kind"]) if raw.get("kind") else None,
                      tuple(NoteType.parse(t) for t in raw.get("types") or ()),
                      _strings(raw, "files"), raw.get("budget"), raw.get("as_of") or None,
                      bool(raw.get("history")))


def _fact(raw: Raw) -> Draft:
    return Draft(type=raw["type"], title=raw["title"], body=raw.get("body", ""),
                 files=_strings(raw, "files"),
                 links=tuple((link["rel"], link["target"]) for link in raw.get("links") or ()),
                 supersedes=raw.get("supersedes") or None, tags=_strings(raw, "tags"),
                 source="agent", error=raw.get("error") or "", remedy=raw.get("remedy") or None,
                 command=raw.get("command") or None)


def _handoff(raw: Raw) -> HandoffArgs:
    return HandoffArgs(raw["action"], raw.get("goal", ""), raw.get("state", ""),
                       _strings(raw, "decisions"), _strings(raw, "next_steps"),
                       _strings(raw, "open_questions"), _strings(raw, "files"),
                       raw.get("id") or None)


PARSERS: dict[str, Callable[[Raw], ToolArgs]] = {
    "recall": _recall,
    "remember": lambda raw: RememberArgs(tuple(_fact(f) for f in raw["facts"]),
                                         bool(raw.get("personal"))),
    "read": lambda raw: ReadArgs(raw["target"]),
    "map": lambda raw: MapArgs(raw.get("module") or ""),
    "handoff": _handoff,
    "forget": lambda raw: ForgetArgs(raw["id"], raw.get("reason") or None,
                                     bool(raw.get("purge")), bool(raw.get("erase"))),
    "outcome": lambda raw: OutcomeArgs(raw["id"], raw["result"], raw.get("note") or None),
    "related": lambda raw: RelatedArgs(raw["target"], int(raw.get("limit") or 50)),
    "timeline": lambda raw: TimelineArgs(raw.get("since") or None,
                                         int(raw.get("commits") or 10)),
    "stats": lambda raw: StatsArgs(),
    "verify": lambda raw: VerifyArgs(raw["claim"]),
}
RECORDS: dict[str, type[NamedTuple]] = {
    "recall": RecallArgs, "remember": RememberArgs, "read": ReadArgs, "map": MapArgs,
    "handoff": HandoffArgs, "forget": ForgetArgs, "outcome": OutcomeArgs,
    "related": RelatedArgs,
    "timeline": TimelineArgs, "stats": StatsArgs, "verify": VerifyArgs,
}
FACT_FIELDS = ("type", "title", "body", "files", "links", "supersedes", "tags", "error",
               "remedy", "command")


def parse(tool: str, raw: Raw) -> ToolArgs:
    """The typed arguments of `tool` from its validated JSON arguments."""
    return PARSERS[tool](raw)
