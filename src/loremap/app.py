"""The composition root: reads settings, finds the project, opens the vaults and the index.

CLI commands and (later) the MCP server get everything through `App.open()`; nothing else
constructs stores or services, and there are no module-level singletons.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from loremap.config import (
    CONFIG_FILE,
    LOREMAP_DIR,
    Settings,
    UserPaths,
    find_project_root,
    load_settings,
)
from loremap.errors import InvalidInput, NotFound, SchemaTooNew, StoreError
from loremap.git import head_commit, origin_folder, origin_key
from loremap.memory.service import Memory
from loremap.store.sqlite import SqliteStore, set_aside
from loremap.text import Analyzer
from loremap.vault.layout import Vault
from loremap.vault.project import INDEX_FILE, PERSONAL_INDEX_FILE, check_project, scaffold

if TYPE_CHECKING:
    from loremap.codemap.index import IndexReport
    from loremap.embed import EmbedSettings
    from loremap.model import IndexedNote
    from loremap.search import Engine, SearchConfig
    from loremap.search.embed import Embedder, Source
    from loremap.search.federated import Federated
    from loremap.store import AuditLog, IndexStore

_ANALYZER_META = "analyzer.languages"
_MAP_META = "map.notes_digest"


class App:
    """Everything a command needs, wired once."""

    def __init__(self, settings: Settings, user: UserPaths, root: Path | None,
                 loremap_dir: Path | None, store: IndexStore, memory: Memory,
                 notices: list[str], chains: Chains | None = None) -> None:
        self.settings = settings
        self.user = user
        self.root = root
        self.loremap_dir = loremap_dir
        self.store = store
        self.memory = memory
        self.notices = notices
        self.chains = chains
        self._reconciled = -1e9  # monotonic time of the last reconcile
        self._personal: App | None = None
        self._embedder: Embedder | None | Literal[False] = False  # False: not loaded yet
        self.embed_failures: list[str] = []

    @classmethod
    def open(cls, cwd: Path | None = None, environ: Mapping[str, str] | None = None,
             require_project: bool = True, fresh_index: bool = False) -> App:
        """Open the project around `cwd` (or only the personal vault outside any project).

        `fresh_index` sets aside an index that cannot be opened for any reason (for `reindex`).
        """
        env = os.environ if environ is None else environ
        cwd = Path.cwd() if cwd is None else cwd
        root = find_project_root(cwd, env)
        loremap_dir = root / LOREMAP_DIR if root is not None else None
        if loremap_dir is not None and not loremap_dir.is_dir():
            loremap_dir = None
        if require_project and loremap_dir is None:
            where = f" at {root}" if root is not None else ""
            raise NotFound(f"no loremap project{where}: run `loremap init` in the repository")
        if loremap_dir is not None:
            check_project(loremap_dir)  # settings and index are opened by name: no link
        config_file = loremap_dir / CONFIG_FILE if loremap_dir is not None else None
        settings = load_settings(config_file, env)
        user = UserPaths.from_env(env)
        return cls._wire(settings, user, root if loremap_dir else None, loremap_dir, fresh_index)

    @classmethod
    def _wire(cls, settings: Settings, user: UserPaths, root: Path | None,
              loremap_dir: Path | None, fresh_index: bool) -> App:
        try:
            analyzer = Analyzer(settings.get_list("text.languages"))
        except InvalidInput as exc:  # before anything is opened: nothing has changed
            raise InvalidInput(f"text.languages: {exc}") from None
        index = (loremap_dir / INDEX_FILE if loremap_dir is not None
                 else user.cache / PERSONAL_INDEX_FILE)
        notices: list[str] = []
        url = settings.get_str("store.url")
        store: IndexStore
        if url and root is not None and loremap_dir is not None:
            store = _open_shared(url, settings, root, analyzer)
        else:
            store = _open_store(index, analyzer, settings.get_int("index.busy_timeout_ms"),
                                notices, fresh_index)
        max_bytes = settings.get_int("vault.max_note_bytes")
        timeout = settings.get_float("vault.lock_timeout_s")
        personal = Vault(user.personal, "personal", max_bytes, timeout)
        project = (Vault(loremap_dir, "project", max_bytes, timeout)
                   if loremap_dir is not None else None)
        chains = Chains(store, settings, root)
        memory = Memory(store, analyzer, personal, project, repo_root=root,
                        commit=(lambda: head_commit(root)) if root is not None else (lambda: None),
                        audit=chains,
                        personal_index=None if loremap_dir is None
                        else (lambda: app.personal_store()))
        app = cls(settings, user, root, loremap_dir, store, memory, notices, chains)
        app._check_analyzer(analyzer.signature)
        return app

    def _check_analyzer(self, signature: str) -> None:
        """Trigger: the analyzer's languages or rules (`Analyzer.signature`) differ from those
        the index was built with. Why: stems from another language or rule never match; the
        index would silently miss. Outcome: rebuild the index now and say so."""
        recorded = self.store.meta(_ANALYZER_META)
        if recorded == signature:
            return
        if recorded is not None:
            self.memory.rebuild()
            self.notices.append(f"index rebuilt: the analyzer changed from {recorded} to "
                                f"{signature}")
        with self.store.write():
            self.store.set_meta(_ANALYZER_META, signature)

    def index_code(self, progress: Callable[[int, int], None] | None = None) -> IndexReport:
        """Bring the code map in line with the repository and re-render the map pages."""
        from loremap.codemap.discover import SkipRules
        from loremap.codemap.index import index_code
        from loremap.codemap.render import render_all

        if self.root is None or self.loremap_dir is None:
            raise NotFound("no loremap project here: run `loremap init` in the repository")
        # The pages list the notes: bring them in first (after an index rebuild they would be
        # missing until the next reading command).
        self.notices += self.memory.reconcile().warnings
        s = self.settings
        rules = SkipRules(max_bytes=s.get_int("codemap.max_file_bytes"),
                          exclude=SkipRules().exclude + s.get_list("codemap.exclude"))
        workers = s.get_int("codemap.workers") or min(os.cpu_count() or 1, 4)
        report = index_code(self.store, self.root, rules, head_commit(self.root), workers,
                            progress, s.get_int("codemap.history_commits"))
        project = s.get_str("project.name") or self.root.name
        digest = f"{self.store.notes_digest()} {project}"
        stale = self.store.meta(_MAP_META) != digest
        if report.changed or stale or not (self.loremap_dir / "map.md").exists():
            only = None if stale else report.modules
            render_all(self.store, self.root, self.loremap_dir, only, project)
            with self.store.write():
                self.store.set_meta(_MAP_META, digest)
        return report

    def engine(self, config: SearchConfig | None = None, hook: bool = False
               ) -> Engine | Federated:
        """The search engine on this index (with the personal notes' own index on a shared
        database), tuned by `search.tuning` unless `config` is given. It reads the index as it
        is: freshness is the caller's step (`loremap.use.fresh.refresh`)."""
        from loremap.search import SearchConfig

        if config is None:
            config = SearchConfig.parse(self.settings.get_str("search.tuning"))
        engine = self._engine(config, hook)
        personal = self.personal_index()
        if personal is None:
            return engine
        from loremap.search.federated import Federated

        # The project's embedder serves both indexes: one model loaded, one list of failures.
        return Federated(engine, personal._engine(config, hook, engine.embedder))

    def _engine(self, config: SearchConfig, hook: bool = False,
                embedder: Embedder | None | Literal[False] = False) -> Engine:
        """The engine of this index alone (with `embedder`, not this index's own, if given)."""
        from loremap.search import Engine

        stale = None
        if self.root is not None:
            from loremap.memory.stale import staleness

            stale = staleness(self.root)
        if embedder is False:
            embedder = self.embedder(hook)
        return Engine(self.store, self.memory.analyzer, config, embedder, stale,
                      self.source() if embedder is not None else None)

    def source(self) -> Source | None:
        """The text of a repository file, for its vectors and for where a vector matched it
        (None: unreadable, binary, too big, or a link leading out of the repository)."""
        root = self.root
        if root is None:
            return None
        cap = self.settings.get_int("codemap.max_file_bytes")

        def read(path: str) -> str | None:
            from loremap.errors import UserError
            from loremap.vault.fs import read_confined

            try:
                data = read_confined(root / path, root)
            except (OSError, UserError):
                return None
            if len(data) > cap or b"\0" in data[:8192]:
                return None
            return data.decode("utf-8", errors="replace")
        return read

    def embedder(self, hook: bool = False) -> Embedder | None:
        """The configured embedder (`search.embedder`), loaded once, or None.

        A model that cannot load here (the extra missing, a model not downloaded, broken
        files) is None plus a `degraded` notice: search goes on lexical and says why. With
        `hook`, a model whose loading costs more than the prompt hook's budget is None too (the
        hook stays lexical; the log says why)."""
        spec = self.settings.get_str("search.embedder")
        if not spec:
            return None  # vectors off: nothing to import
        if hook and self._embedder is False:
            from loremap.embed import loads_fast

            if not loads_fast(spec):
                from loremap.logs import log_line

                log_line("hook.log", f"prompt hook: vectors off, loading {spec} costs more "
                         "than the hook's budget (a warm process can serve them)")
                return None
        if self._embedder is False:
            self._embedder = self._load_embedder()
        return self._embedder

    def embed_apart(self) -> bool:
        """Embed questions in a process of their own (`embed/apart.py`), for a process that
        stays up (the daemon): the configured model loaded, and run in numpy. Whether one
        started."""
        from loremap.embed import Watched

        embedder = self.embedder()
        return isinstance(embedder, Watched) and embedder.query_apart(
            self.settings.get_float("embed.timeout_s"))

    def adopt_embedder(self, other: App) -> bool:
        """Use the embedder `other` loaded, when both name the same one (the daemon's Apps of
        one project share one model); whether it did."""
        spec = self.settings.get_str("search.embedder")
        if (other._embedder is False or not spec or self._embedder is not False
                or spec != other.settings.get_str("search.embedder")):
            return False
        self._embedder = other._embedder
        self.embed_failures = other.embed_failures  # where the shared model reports
        return True

    def embed_settings(self) -> EmbedSettings:
        """What the embedding providers read besides `search.embedder`."""
        from loremap.embed import EmbedSettings

        return EmbedSettings(self.user.models, self.settings.get_str("embed.url"),
                             self.settings.get_float("embed.timeout_s"),
                             os.environ.get("LOREMAP_EMBED_API_KEY") or None, self.root)

    def reset_embedder(self) -> None:
        """Load the embedder again on next use (its setting changed)."""
        self._embedder = False

    def _load_embedder(self) -> Embedder | None:
        from loremap.embed import Watched, make_embedder
        from loremap.errors import EmbedderUnavailable

        try:
            inner = make_embedder(self.settings.get_str("search.embedder"),
                                  self.memory.analyzer, self.embed_settings())
        except EmbedderUnavailable as exc:
            self.notices.append(f"degraded: vectors are off ({exc}); search is lexical")
            return None
        return None if inner is None else Watched(inner, self.embed_failures)

    def embed_degraded(self) -> list[str]:
        """What went wrong with the embedder since the last call, as `degraded` warnings."""
        failures = list(dict.fromkeys(self.embed_failures))
        self.embed_failures.clear()
        return [f"degraded: vectors are off for this answer ({f}); search is lexical"
                for f in failures]

    def take_notices(self) -> list[str]:
        """What opening the index had to say (a rebuilt index, changed languages), once: the
        answer that takes them shows them, the next one does not repeat them."""
        notices = list(self.notices)
        self.notices.clear()
        return notices

    def reconcile(self, max_age_s: float = 0.0) -> list[str]:
        """Bring the index in line with the note files; returns the warnings.

        Trigger: `max_age_s` > 0 and the last reconcile is more recent than that. Why: a
        long-running server would stat every note file on every call (~45 ms at 10k notes),
        while only hand edits and git pulls need it (writes, ours or another process's, update
        the shared index themselves). Outcome: skip it; such edits show up `max_age_s` late."""
        now = time.monotonic()
        if max_age_s > 0 and now - self._reconciled < max_age_s:
            return []
        warnings = self.memory.reconcile().warnings
        personal = self.personal_index()
        if personal is not None:  # the shared database is never reconciled; this index is
            warnings += personal.memory.reconcile().warnings
        self._reconciled = now
        return warnings

    @property
    def shared(self) -> bool:
        """Whether the index is a shared database (PostgreSQL) rather than this vault's own."""
        return self.store.shared

    @property
    def index_path(self) -> Path:
        return Path(self.store.location)

    def personal_index(self) -> App | None:
        """On a shared database, the personal notes' own index, the one used outside any
        project (`<cache>/personal-index.sqlite`): they never enter the shared database, where
        teammates would read them, and are still searched with the project. None otherwise
        (the project's index holds them)."""
        if not self.shared:
            return None
        if self._personal is None:
            self._personal = App._wire(self.settings, self.user, None, None, False)
        return self._personal

    @contextlib.contextmanager
    def personal_store(self) -> Iterator[IndexStore | None]:
        """The personal vault's own index (`<cache>/personal-index.sqlite`) for a moment, when
        this App's index is another one (`Memory.erase` of a personal note reaches it): beside
        a shared database the one `personal_index` holds; in a project on SQLite the file as
        the last command outside any project left it (opened, and closed after), or None when
        it was never built."""
        path = self.user.cache / PERSONAL_INDEX_FILE
        if self.loremap_dir is None:
            yield None  # outside any project this App's index is that file
        elif self.shared:
            personal = self.personal_index()
            yield None if personal is None else personal.store
        elif not path.is_file():
            yield None
        else:
            store = SqliteStore(path, self.memory.analyzer,
                                self.settings.get_int("index.busy_timeout_ms"))
            try:
                yield store
            finally:
                store.close()

    def list_notes(self, types: Sequence[str] = (), statuses: Sequence[str] = ()
                   ) -> list[IndexedNote]:
        """The indexed notes, newest first; on a shared database with this machine's personal
        notes from their own index."""
        notes = self.memory.list_notes(types, statuses)
        personal = self.personal_index()
        if personal is None:
            return notes
        notes += personal.memory.list_notes(types, statuses)
        notes.sort(key=lambda n: n.id)
        notes.sort(key=lambda n: n.recorded_at or "", reverse=True)  # undated last, as stored
        return notes

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._personal is not None:
            self._personal.close()
        if self.chains is not None:
            self.chains.close()
        self.store.close()


def project_key(settings: Settings, root: Path) -> str:
    """The project's key in a shared database (see `project_key_rule`)."""
    return project_key_rule(settings, root)[0]


def project_key_rule(settings: Settings, root: Path) -> tuple[str, str]:
    """The project's key in a shared database and the rule that gave it, the first that
    applies: `store.project`; the git remote `origin` as host/owner/repo (`origin_key`: a
    clone of a repository on this machine takes that repository's key); `project.name`; the
    folder's name (a clone of a folder on this machine: the name of the folder it came from).
    Two machines share notes only under one key: docs/postgres.md says which rule to pick."""
    if settings.get_str("store.project"):
        return settings.get_str("store.project"), "store.project"
    origin = origin_key(root)
    if origin:
        return origin, "the git remote origin"
    if settings.get_str("project.name"):
        return settings.get_str("project.name"), "project.name"
    return origin_folder(root).name, "the folder's name"


class Chains:
    """Each vault's audit chain (docs/audit.md), made on first use and closed with the App:
    the shared database's for the project's notes when the index is shared, else the file
    `audit.sqlite` beside the vault's notes (the personal notes' on a shared database too:
    they never enter it)."""

    def __init__(self, store: IndexStore, settings: Settings, root: Path | None) -> None:
        self.store = store
        self.settings = settings
        self.root = root
        self.made: dict[str, AuditLog] = {}

    def __call__(self, vault: Vault) -> AuditLog:
        if vault.scope not in self.made:
            self.made[vault.scope] = self._make(vault)
        return self.made[vault.scope]

    def _make(self, vault: Vault) -> AuditLog:
        if self.store.shared and vault.scope == "project":
            from loremap.store.postgres.audit import PgAudit
            from loremap.store.postgres.store import PostgresStore

            assert isinstance(self.store, PostgresStore)
            return PgAudit(self.store)
        from loremap.audit import whoami
        from loremap.store.sqlite.audit import AUDIT_FILE, SqliteAudit

        project = (project_key(self.settings, self.root) if vault.scope == "project" and
                   self.root is not None else vault.scope)
        return SqliteAudit(vault.root / AUDIT_FILE, project, whoami(),
                           self.settings.get_int("index.busy_timeout_ms"))

    def close(self) -> None:
        for log in self.made.values():
            log.close()
        self.made.clear()


def _open_shared(url: str, settings: Settings, root: Path, analyzer: Analyzer) -> IndexStore:
    """The shared database at `url` (`loremap[postgres]`)."""
    from loremap.audit import whoami
    from loremap.errors import InvalidInput
    from loremap.store.postgres import INSTALL_HINT

    try:
        from loremap.store.postgres.store import PostgresStore
    except ImportError:
        raise InvalidInput("store.url is a PostgreSQL database but psycopg is not installed: "
                           f"{INSTALL_HINT}") from None
    return PostgresStore(url, project_key(settings, root), analyzer,
                         settings.get_int("index.busy_timeout_ms"), writer=whoami(),
                         connect_timeout_s=settings.get_int("store.connect_timeout_s"))


def _open_store(index: Path, analyzer: Analyzer, busy_ms: int, notices: list[str],
                fresh: bool) -> SqliteStore:
    """Open the index; a corrupt file is moved aside and rebuilt (the vault is canonical).

    An index from a newer loremap is refused unless `fresh`: it may belong to a newer copy
    of loremap on the same machine, which would otherwise lose it on every run of this one.
    """
    try:
        return SqliteStore(index, analyzer, busy_ms)
    except StoreError as exc:
        if isinstance(exc, SchemaTooNew) and not fresh:
            raise
        aside = set_aside(index)
        notices.append(f"the index was unreadable and was rebuilt from the notes (old file kept "
                       f"as {aside.name})")
        store = SqliteStore(index, analyzer, busy_ms)
        return store


def init_project(cwd: Path, environ: Mapping[str, str] | None = None) -> tuple[App, list[str]]:
    """Create `.loremap/` at the project root (git root, else `cwd`) and open it."""
    env = os.environ if environ is None else environ
    root = find_project_root(cwd, env) or cwd.resolve()
    created = scaffold(root / LOREMAP_DIR)
    app = App.open(root, {**env, "LOREMAP_PROJECT_DIR": str(root)})
    return app, created
