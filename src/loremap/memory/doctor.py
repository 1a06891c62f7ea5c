"""`loremap doctor`: is the index a faithful copy of the vault, and is the vault sound?

Each check yields findings; `fix=True` repairs what can be repaired without guessing: leftover
temp files of interrupted writes, batches of notes a crash left half renamed (finished, or
rolled back), a stale index, supersessions half-applied by a crash, missing
scaffolding, a `.gitignore` that would let git take this clone's audit chain. Broken links,
malformed files and a broken audit chain are reported for a person to decide (the chain is the
record: nothing repairs it).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from loremap.errors import MalformedNote, StoreError, UnsafePath
from loremap.memory.paths import is_path_target
from loremap.memory.service import Memory
from loremap.model import Status
from loremap.store import SCHEMA_VERSION
from loremap.store.sqlite import SqliteStore, set_aside
from loremap.vault.layout import LoadedNote, Vault
from loremap.vault.project import ignore_audit, missing_parts, scaffold, unignored_audit


class Finding(NamedTuple):
    """One thing doctor noticed; `fixed` says whether `--fix` repaired it."""

    level: str  # "ok" | "warning" | "error"
    check: str
    message: str
    fixed: bool = False


def _check_scaffold(loremap_dir: Path | None, fix: bool, repo: Path | None) -> list[Finding]:
    if loremap_dir is None:
        # Trigger: no `.loremap/` here or above. Why: "all good" would read as a sound
        # project. Outcome: a warning; the personal vault is still checked (exit 0 if sound).
        where, init = ((f"{repo} has no .loremap/", "the") if repo is not None
                       else ("no .loremap/ or git repository here or above", "a"))
        return [Finding("warning", "project", f"no loremap project here ({where}): only the "
                        f"personal vault was checked; `loremap init` in {init} repository makes "
                        "one")]
    missing = missing_parts(loremap_dir)
    if not missing:
        return [Finding("ok", "layout", f"{loremap_dir.name}/ has config.toml and .gitignore")]
    if fix:
        scaffold(loremap_dir)
    return [Finding("warning", "layout", f"missing in {loremap_dir.name}/: {', '.join(missing)}",
                    fixed=fix)]


def _check_batches(memory: Memory, fix: bool) -> list[Finding]:
    """A batch of note files whose writer died between its renames (memory/batch.py): some
    notes of it are in place, the others still in temp files. Run before the temp-file check,
    which would delete those temp files; under the vault's lock, so a live batch is not one."""
    from loremap.memory.batch import journals, resolve

    out = []
    for vault in memory.vaults:
        if not journals(vault):
            continue
        with vault.lock():
            for journal in journals(vault):
                found = resolve(vault, journal, fix)
                out.append(Finding("error", "batch", found.message(vault), fixed=fix))
    return out


def _check_symlinks(memory: Memory, loremap_dir: Path | None) -> list[Finding]:
    """Every symlink under `.loremap/` and the personal vault, named with its target.

    loremap follows none of them out of the repository (or the personal vault) and reads no
    linked file, so each one hides something. `--fix` leaves them: a link in `.loremap/` came
    with the repository (a commit to look at, then `git rm`), and ignoring it is already safe.
    """
    from loremap.vault.project import symlinks

    places = [(memory.personal.root, memory.personal.boundary, "the personal vault")]
    if loremap_dir is not None:
        places.insert(0, (loremap_dir, loremap_dir.parent, "the repository"))
    out = []
    for folder, root, name in places:
        for link in symlinks(folder, root):
            shown = link.path.relative_to(root) if link.path.is_relative_to(root) else link.path
            if link.outside:
                out.append(Finding("error", "symlinks", f"{shown} is a symlink to "
                                   f"{link.target}, outside {name}: loremap does not follow it; "
                                   "remove the link"))
            elif not link.path.is_dir():  # a folder linked inside the boundary is followed
                out.append(Finding("warning", "symlinks", f"{shown} is a symlink to "
                                   f"{link.target}: loremap reads no linked file; put the file "
                                   "itself there"))
    return out


def _check_temp_files(memory: Memory, fix: bool) -> list[Finding]:
    out = []
    for vault in memory.vaults:
        for tmp in vault.temp_files():
            if fix:
                tmp.unlink(missing_ok=True)
            out.append(Finding("warning", "temp-files", f"leftover of an interrupted write: "
                               f"{vault.display(tmp)}", fixed=fix))
    return out


class _Reads:
    """Each note file read once in a diagnosis, whichever checks ask for it (three read every
    note: supersession, Links sections, secrets); a check that rewrites a note forgets it."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], LoadedNote | MalformedNote] = {}

    def read(self, vault: Vault, note_id: str) -> LoadedNote:
        """`vault.read(note_id)`, once; a malformed file raises its `MalformedNote` each time."""
        key = (vault.scope, note_id)
        got = self._seen.get(key)
        if got is None:
            try:
                got = vault.read(note_id)
            except MalformedNote as exc:
                got = exc
            self._seen[key] = got
        if isinstance(got, MalformedNote):
            raise got
        return got

    def forget(self, vault: Vault, note_id: str) -> None:
        self._seen.pop((vault.scope, note_id), None)


def _check_supersession(memory: Memory, fix: bool, reads: _Reads) -> list[Finding]:
    """A note that supersedes X must find X marked superseded by it (a crash can split them)."""
    out = []
    for vault in memory.vaults:
        for row in memory.store.list_notes(scope=vault.scope):
            if not vault.exists(row.id):
                continue  # a shared database's note not pulled here yet
            try:
                loaded = reads.read(vault, row.id)
                target = loaded.note.supersedes
                if not target or not vault.exists(target):
                    continue
                old = reads.read(vault, target).note
            except MalformedNote:
                continue  # the index check reports the file; nothing to compare here
            if old.status is Status.SUPERSEDED and old.superseded_by == row.id:
                continue
            if old.status is Status.SUPERSEDED and old.superseded_by:
                continue  # superseded by a later note; both claims are recorded
            message = f"'{row.id}' supersedes '{target}', but '{target}' is {old.status.value}"
            if fix:
                valid_to = old.valid_to or (loaded.note.valid_from or None)
                fixed = old._replace(status=Status.SUPERSEDED, superseded_by=row.id,
                                            valid_to=valid_to)
                memory.rewrite(vault, fixed, "supersede",
                               f"superseded by {row.id}: repaired by `loremap doctor --fix`")
                reads.forget(vault, target)
            out.append(Finding("error", "supersession", message, fixed=fix))
    return out


def _check_links_sections(memory: Memory, fix: bool, reads: _Reads) -> list[Finding]:
    """Note files whose generated `## Links` section is not what loremap writes now (written
    before it linked files and paths to their module pages): Obsidian's graph misses their
    edges to the code. `--fix` writes them again."""
    from loremap.vault.frontmatter import links_section

    stale = []
    for vault in memory.vaults:
        for row in memory.store.list_notes(scope=vault.scope):
            if not vault.exists(row.id):
                continue
            try:
                loaded = reads.read(vault, row.id)
            except MalformedNote:
                continue
            section = links_section(loaded.note)
            if section.strip() and not loaded.text.rstrip("\n").endswith(section.rstrip("\n")):
                stale.append((vault, loaded.note))
    if not stale:
        return []
    if fix:
        for vault, note in stale:
            memory.rewrite(vault, note, "repair",
                           "Links section written again by `loremap doctor --fix`")
            reads.forget(vault, note.id)
    shown = ", ".join(note.id for _, note in stale[:3]) + (" ..." if len(stale) > 3 else "")
    return [Finding("warning", "links-section", f"{len(stale)} note(s) carry a Links section "
                    f"older than their frontmatter's links and files ({shown}); `loremap doctor "
                    "--fix` writes it again (the Obsidian graph links them to their code)",
                    fixed=fix)]


ERASE_REASON = "leaked secret"


def erase_command(note_id: str) -> str:
    """The command that removes every copy of a note holding a secret (`Memory.erase`)."""
    return f'`loremap forget {note_id} --erase --reason "{ERASE_REASON}"`'


def _check_secrets(memory: Memory, reads: _Reads) -> list[Finding]:
    """Credentials found after the fact: every note file of each vault scanned (a hand edit, a
    `git pull`: loremap's own writes refuse one, and the index keeps such a note out of recall,
    `guarded`), and on a shared database every text it keeps, each earlier version included
    (a text stored before the scanner knew its kind of key stays in `note_versions` when the
    note is edited). `--fix` leaves them: only a person can rotate a secret (git has it).
    Each finding names the command that erases every copy (`forget --erase`: the file, the
    index rows, every version on the database, the quotes beside the notes)."""
    from loremap.vault.secrets import scan

    out = []
    named: set[str] = set()
    for vault in memory.vaults:
        for file in vault.scan():
            try:
                loaded = reads.read(vault, file.id)
            except (MalformedNote, UnsafePath, OSError):
                continue  # the index and symlink checks name these
            found = scan(loaded.text)
            if not found or file.id in named:
                continue
            named.add(file.id)
            out.append(Finding("error", "secrets", f"{vault.display(file.path)} line "
                               f"{found[0].line} holds a {found[0].kind}, kept out of recall: "
                               "rotate it (git has it), then erase every copy with "
                               f"{erase_command(file.id)}"))
    if memory.store.shared:
        out += _shared_secrets(memory, named)
    return out


def _shared_secrets(memory: Memory, named: set[str]) -> list[Finding]:
    """The texts of the shared database that hold a secret, one finding per note not already
    named by its file here."""
    from loremap.store.postgres.store import PostgresStore
    from loremap.vault.secrets import scan

    store = memory.store
    assert isinstance(store, PostgresStore)
    out = []
    for note_id, which, text in store.every_text():
        if note_id in named:
            continue
        found = scan(text)
        if not found:
            continue
        named.add(note_id)
        out.append(Finding("error", "secrets", f"the shared database's note {note_id}: {which} "
                           f"holds a {found[0].kind} on line {found[0].line}: rotate it, then "
                           f"erase the note and every version of it with "
                           f"{erase_command(note_id)}"))
    return out


def _check_vectors(memory: Memory) -> list[Finding]:
    """Stored vectors whose length is not their model's dimension: search skips them, and
    embedding every node again (`reembed`) replaces them."""
    broken = memory.store.broken_vectors()
    if not broken:
        return []
    return [Finding("warning", "vectors", f"{broken} stored vector{'s' * (broken != 1)} "
                    "corrupt (not of their model's dimension), skipped by search: run "
                    "`loremap reembed`")]


def _check_links(memory: Memory) -> list[Finding]:
    out = []
    known = set(memory.store.iter_note_ids())
    root = memory.repo_root
    for edge in memory.store.declared_edges():
        if is_path_target(edge.dst):
            if root is not None and not (root / edge.dst).exists():
                out.append(Finding("warning", "links", f"'{edge.src}' {edge.rel} {edge.dst}: "
                                   "no such path in the repository"))
        elif edge.dst not in known:
            out.append(Finding("warning", "links", f"'{edge.src}' {edge.rel} [[{edge.dst}]]: "
                               "no such note"))
    return out


def _check_shared(memory: Memory) -> list[Finding]:
    """This vault against a shared database: what `loremap sync` would move (never fixed
    here: which side is right is the sync's three-way question)."""
    warnings: list[str] = []
    project = memory.project
    # Personal notes never enter a shared database (they have an index of their own).
    scans = [(project, project.scan())] if project is not None else []
    found = memory.changes(memory.store.note_stamps(), warnings, scans)
    out = [Finding("error", "notes", w.removeprefix("skipped ")) for w in warnings]
    if found.upserts or found.deletes:
        out.append(Finding("warning", "sync", f"{len(found.upserts)} note file(s) here differ "
                           f"from the shared database and {len(found.deletes)} of its notes are "
                           "not here: see `loremap sync status`"))
    else:
        out.append(Finding("ok", "sync", "this vault matches the shared database"))
    return out


def _check_audit(memory: Memory, loremap_dir: Path | None, fix: bool) -> list[Finding]:
    """Each vault's audit chain walked whole, as `loremap audit verify` does (the personal
    vault's only once it has records), and whether git ignores the project's chain file."""
    from loremap.audit.chain import SHORT, verify

    out = []
    for vault in memory.vaults:
        log = memory.audit_log(vault)
        if log is None:
            continue
        where = f"the {vault.scope} chain ({log.location})"
        try:
            verdict = verify(log.records())
        except (StoreError, UnsafePath) as exc:
            out.append(Finding("error", "audit", f"{where}: {exc}"))
            continue
        broken = verdict.broken
        if broken is not None:
            out.append(Finding("error", "audit", f"{where} is broken at record {broken.seq}: "
                               f"{broken.message} (nothing repairs a chain: it is the record)"))
        elif verdict.records:
            out.append(Finding("ok", "audit", f"{where} is unbroken: "
                               f"{verdict.records} record{'s' * (verdict.records != 1)}, head "
                               f"{verdict.head_seq} {verdict.head_hash[:SHORT]}"))
        elif vault.scope == "project":
            out.append(Finding("ok", "audit", f"{where}: no changes recorded yet"))
    missing = [] if loremap_dir is None else unignored_audit(loremap_dir)
    if loremap_dir is not None and missing:
        if fix:
            ignore_audit(loremap_dir, missing)
        out.append(Finding("warning", "audit", f"{loremap_dir.name}/.gitignore does not ignore "
                           f"{', '.join(missing)}: `git add` would commit this clone's audit "
                           "chain; --fix adds the lines", fixed=fix))
    return out


def _check_index(memory: Memory, fix: bool) -> list[Finding]:
    if memory.store.shared:
        return _check_shared(memory)
    damage = memory.store.damage() if isinstance(memory.store, SqliteStore) else None
    if damage is not None:
        # Trigger: pages of the index overwritten (a disk fault, a stray write).
        # Why: its rows can no longer be trusted, and the notes are canonical.
        # Outcome: --fix sets the file aside; the next command rebuilds it from the notes.
        if fix:
            set_aside(Path(memory.store.location))
        return [Finding("error", "index-file", f"the index file is damaged ({damage}); --fix "
                        "sets it aside and rebuilds it from the notes", fixed=fix)]
    warnings: list[str] = []
    found = memory.changes(memory.store.note_stamps(), warnings)  # both vaults: one index
    out = [Finding("error", "notes", w.removeprefix("skipped ")) for w in warnings]
    if found.upserts or found.deletes:
        if fix:
            memory.reconcile()
        out.append(Finding("error", "index", f"index is stale: {len(found.upserts)} new or "
                           f"changed note file(s), {len(found.deletes)} row(s) of deleted files",
                           fixed=fix))
    elif found.touches:
        memory.reconcile()  # only file times moved; refreshing them is not a repair
        out.append(Finding("ok", "index", "index matches the vault"))
    else:
        out.append(Finding("ok", "index", "index matches the vault"))
    return out


def diagnose(memory: Memory, loremap_dir: Path | None, fts5: bool, fix: bool = False,
             repo: Path | None = None) -> list[Finding]:
    """Run every check, repairing what can be repaired when `fix` is set.

    Without `loremap_dir` (no project) the personal vault alone is checked, and a warning says
    so; `repo` is the git repository found instead, if any, to name in it.
    """
    findings = [
        Finding("ok", "fts5", "SQLite has FTS5") if fts5 else
        Finding("error", "fts5", "this Python's SQLite lacks FTS5; install a Python built with it"),
    ]
    version = memory.store.schema_version()
    if memory.store.shared:
        from loremap.store.postgres.schema import MIGRATIONS

        findings[0] = Finding("ok", "store", f"shared database {memory.store.location}")
        findings.append(Finding("ok", "schema", f"database schema version {version}")
                        if version == len(MIGRATIONS) else
                        Finding("error", "schema", f"database schema {version}, expected "
                                f"{len(MIGRATIONS)}: run `loremap db migrate`"))
    else:
        findings.append(
            Finding("ok", "schema", f"index schema version {version}")
            if version == SCHEMA_VERSION
            else Finding("error", "schema", f"index schema {version}, expected "
                         f"{SCHEMA_VERSION}; run `loremap reindex`"))
    findings += _check_scaffold(loremap_dir, fix, repo)
    findings += _check_batches(memory, fix)
    findings += _check_temp_files(memory, fix)
    findings += _check_symlinks(memory, loremap_dir)
    try:
        findings += _check_index(memory, fix)
        reads = _Reads()
        findings += _check_supersession(memory, fix, reads)
        findings += _check_links_sections(memory, fix, reads)
        findings += _check_secrets(memory, reads)
    except UnsafePath:
        pass  # a vault folder linked out: named by the symlinks check, nothing to compare
    findings += _check_links(memory)
    findings += _check_vectors(memory)
    findings += _check_audit(memory, loremap_dir, fix)
    return findings
