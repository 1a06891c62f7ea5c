"""A draft note: what a caller asks to remember, and every check it must pass before a write.

The checks run before the vault is locked, so a refused draft changes nothing: the type, the
title, a body that says something, the files (inside the repository and existing), the links,
the size, and a secret in any field as the caller gave it (before YAML quoting or folding could
hide it). `Memory` (service.py) writes what passes; a batch is checked whole first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from loremap.errors import InvalidInput, SecretFound
from loremap.git import blob_hash
from loremap.memory.paths import check_path_target, is_path_target, repo_path
from loremap.model import Link, NoteType, Relation, check_id
from loremap.vault.ids import check_title

NO_BODY = "the body is empty: say what was learned, why, and how to apply it"


class Draft(NamedTuple):
    """What a caller asks to remember, before an id, times and hashes are assigned."""

    type: str
    title: str
    body: str = ""
    files: Sequence[str] = ()
    links: Sequence[tuple[str, str]] = ()
    supersedes: str | None = None
    tags: Sequence[str] = ()
    source: str = "agent"
    cwd: Path | None = None  # where relative `files` start (None: the repository root)
    # An error note's error text (its signature is kept: text/signature.py), the note that
    # fixed it, and the command that failed.
    error: str = ""
    remedy: str | None = None
    command: str | None = None


def fields(draft: Draft) -> list[tuple[str, str]]:
    """Every text of `draft` that lands in the note file, named as the caller gave it."""
    return [("title", draft.title), ("body", draft.body),
            *((f"tags[{i}]", t) for i, t in enumerate(draft.tags)),
            *((f"files[{i}]", f) for i, f in enumerate(draft.files)),
            *((f"links[{i}]", t) for i, (_, t) in enumerate(draft.links)),
            *((name, text) for name, text in (("error", draft.error),
                                               ("command", draft.command or "")) if text)]


MAX_ERROR_TEXT = 20_000  # characters of an error note's error text


def check_error_keys(draft: Draft, label: str | None) -> None:
    """An error note's error text, remedy and command: only on an error note, the text holding
    something to recognise it by, the remedy a note id. A field is named `<label>.<field>`, or
    as the CLI option (`--error`) without a label."""
    from loremap.text.signature import signature

    def name(field: str) -> str:
        return f"--{field}" if label is None else f"{label}.{field}"

    given = [field for field, value in (("error", draft.error), ("remedy", draft.remedy),
                                        ("command", draft.command)) if value]
    if not given:
        return
    if NoteType.parse(draft.type) is not NoteType.ERROR:
        raise InvalidInput(f"{name(given[0])}: only an error note records an error, its "
                           "remedy and its command (its type is error)")
    if draft.error and len(draft.error) > MAX_ERROR_TEXT:
        raise InvalidInput(f"{name('error')} is {len(draft.error):,} characters; give the "
                           f"lines that say what failed (at most {MAX_ERROR_TEXT:,})")
    if draft.error and not signature(draft.error):
        raise InvalidInput(f"{name('error')} holds nothing to recognise the error by")
    if draft.remedy:
        try:
            check_id(draft.remedy)
        except InvalidInput as exc:
            raise InvalidInput(f"{name('remedy')}: {exc}") from None
    if draft.command is not None and not draft.command.strip():
        raise InvalidInput(f"{name('command')} is empty")


def clean_files(repo_root: Path | None, files: Sequence[str], cwd: Path | None
                ) -> tuple[str, ...]:
    """The files as repository paths (relative ones start at `cwd`, else the root)."""
    if repo_root is None:
        if files:
            raise InvalidInput("--file needs a project (run `loremap init` in a repository)")
        return ()
    base = repo_root if cwd is None else cwd
    return tuple(dict.fromkeys(repo_path(f, repo_root, base) for f in files))


def clean_links(links: Sequence[tuple[str, str]]) -> tuple[Link, ...]:
    out = []
    for rel, target in links:
        target = target.strip()
        if is_path_target(target):
            check_path_target(target)
        else:
            check_id(target)
        out.append(Link(Relation.parse(rel), target))
    return tuple(dict.fromkeys(out))


def check_files(repo_root: Path | None, files: Sequence[str], cwd: Path | None,
                warnings: list[str]) -> None:
    """A note's files must exist in the repository (a mistyped path would never be flagged
    as changed); a binary one is kept with a warning."""
    if repo_root is None:
        return
    for rel in clean_files(repo_root, files, cwd):
        path = repo_root / rel
        if not path.exists():
            raise InvalidInput(f"file {rel!r} does not exist in the repository (a note's files "
                               f"are paths that exist; link a planned one with --link "
                               f"affects:{rel})")
        if path.is_file():
            with open(path, "rb") as fh:
                head = fh.read(8192)
            if b"\0" in head:
                warnings.append(f"{rel} is a binary file: the note is kept with it, but notes "
                                "usually describe text and source files")


def file_hashes(repo_root: Path | None, files: Sequence[str]) -> dict[str, str]:
    """The git blob hash of each file now (what staleness compares with later)."""
    if repo_root is None:
        return {}
    hashes = {}
    for rel in files:
        digest = blob_hash(repo_root / rel)
        if digest is not None:
            hashes[rel] = digest
    return hashes


def check_draft(draft: Draft, label: str, repo_root: Path | None,
                max_body_bytes: int | None = None) -> None:
    """Refuse `draft` before anything is written, naming the field at fault as
    `<label>.<field>`: for a batch, every fact is checked before the first is written."""
    from loremap.vault.secrets import scan

    NoteType.parse(draft.type)
    try:
        check_title(draft.title)
    except InvalidInput as exc:
        raise InvalidInput(f"{label}.title: {exc}") from None
    if draft.supersedes:
        check_id(draft.supersedes)
    check_error_keys(draft, label)
    if not draft.body.strip():
        raise InvalidInput(f"{label}.body: {NO_BODY}")
    try:
        check_files(repo_root, draft.files, draft.cwd, [])
    except InvalidInput as exc:
        raise InvalidInput(f"{label}.files: {exc}") from None
    size = len(draft.body.encode("utf-8", "surrogatepass"))
    if max_body_bytes is not None and size > max_body_bytes:
        raise InvalidInput(f"{label}.body is {size} bytes, over the limit of "
                           f"{max_body_bytes} (vault.max_note_bytes)")
    for name, text in fields(draft):
        found = scan(text)
        if found:
            line = f" line {found[0].line}" if name == "body" else ""
            raise SecretFound(f"refused: {found[0].kind} in {label}.{name}{line}; remove "
                              "it (secrets never land in the vault)")


def refuse_secrets(draft: Draft) -> None:
    """Each field scanned as given, before it is rendered: YAML quoting and folding of a tag
    or a title would otherwise hide a key or a `password:` from the scan."""
    from loremap.vault.secrets import scan

    for name, text in fields(draft):
        found = scan(text)
        if found:
            where = f"at line {found[0].line} of the body" if name == "body" else f"in {name}"
            raise SecretFound(f"refused: {found[0].kind} {where}; remove it, or pass "
                              "--quarantine to store the note with it redacted")


def redacted(draft: Draft, warnings: list[str]) -> tuple[Draft, bool]:
    """`draft` with every secret replaced by `[REDACTED <kind>]`, and whether any was."""
    from loremap.vault.secrets import redact, scan

    kinds: list[str] = []

    def clean(text: str) -> str:
        found = scan(text)
        kinds.extend(f.kind for f in found)
        return redact(text, found) if found else text

    cleaned = draft._replace(
        title=clean(draft.title), body=clean(draft.body), tags=[clean(t) for t in draft.tags],
        links=[(rel, clean(target)) for rel, target in draft.links], error=clean(draft.error),
        command=None if draft.command is None else clean(draft.command))
    if not kinds:
        warnings.append("--quarantine: no secret found; the note is stored as active")
        return draft, False
    warnings.append(f"quarantined: redacted {', '.join(sorted(set(kinds)))}; the note is kept "
                    "out of search until a person reviews it")
    return cleaned, True
