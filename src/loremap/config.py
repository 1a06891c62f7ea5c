"""Settings and paths: one table of settings, project root discovery, per-user directories.

Every setting is declared once in `SETTINGS` with its default, its environment variable and a
line of help; the same table loads values (defaults < `.loremap/config.toml` < `LOREMAP_*`
environment) and generates `docs/settings.md`, so the docs cannot drift from the code.

Paths follow the XDG base directories. `LOREMAP_HOME` moves all per-user state (personal vault,
logs, caches) under one directory, which is also what the tests do to stay away from `$HOME`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from loremap.errors import InvalidInput, NotFound
from loremap.git import git_root

LOREMAP_DIR = ".loremap"
CONFIG_FILE = "config.toml"
# Claude Code compacts this many tokens before its `autoCompactWindow` (20k kept for the answer,
# 13k of buffer; observed with 2.1.328). The X-ray's advice and `loremap compaction` share it.
CLAUDE_COMPACT_MARGIN = 33_000
CLAUDE_MIN_WINDOW = 100_000

SettingValue = str | int | float | bool | tuple[str, ...]


class Setting(NamedTuple):
    """One configurable value: `section.key` in config.toml, `LOREMAP_<KEY>` in the environment."""

    name: str
    default: SettingValue
    env: str
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("project.dir", "", "LOREMAP_PROJECT_DIR",
            "Project root to use instead of discovering it from the working directory "
            "(environment only: config.toml lives inside the project)."),
    Setting("project.name", "", "LOREMAP_PROJECT_NAME",
            "The project's name in the map's title (default: the repository folder's name, "
            "which differs between clones), and its key in a shared database when it has no git "
            "remote `origin` and no store.project."),
    Setting("text.languages", ("en",), "LOREMAP_LANGUAGES",
            "Languages of the notes (comma-separated in the environment, e.g. pt,en). Every word "
            "is stemmed by each language's Snowball stemmer (Portuguese plurals also meet their "
            "singulars), and stopwords of all of them (en, pt, es) are dropped; a change "
            "rebuilds the index. The cost of a second language is in docs/search.md."),
    Setting("vault.max_note_bytes", 262144, "LOREMAP_MAX_NOTE_BYTES",
            "Largest note body accepted, in bytes (UTF-8)."),
    Setting("vault.lock_timeout_s", 30.0, "LOREMAP_LOCK_TIMEOUT_S",
            "Seconds to wait for another process's vault write lock before giving up."),
    Setting("index.busy_timeout_ms", 5000, "LOREMAP_BUSY_TIMEOUT_MS",
            "Milliseconds a writer waits for another writer's index lock before a clear error."),
    Setting("store.url", "", "LOREMAP_DATABASE_URL",
            "PostgreSQL URL of a shared memory (`postgresql://user@host/db`); empty: the embedded "
            "SQLite index. Keep passwords out of config.toml: use the environment or ~/.pgpass."),
    Setting("store.connect_timeout_s", 10, "LOREMAP_CONNECT_TIMEOUT_S",
            "Seconds to wait for the shared database to answer a connection (the hooks wait 2 "
            "unless the environment sets this: an agent's tool call must not hang on an "
            "unreachable server)."),
    Setting("store.project", "", "LOREMAP_PROJECT_KEY",
            "This project's key in a shared database, the same on every machine (default: the "
            "git remote `origin` as host/owner/repo, else project.name, else the folder name; a "
            "clone of a folder on this machine takes that repository's key)."),
    Setting("search.limit", 10, "LOREMAP_SEARCH_LIMIT",
            "Number of results `loremap search` prints by default."),
    Setting("search.budget", 1500, "LOREMAP_SEARCH_BUDGET",
            "Token budget of a recall (`loremap search --budget`, the MCP recall tool, the "
            "prompt hook): the best items that fit, never more."),
    Setting("search.tuning", "", "LOREMAP_SEARCH_TUNING",
            "Search engine settings as key=value pairs (e.g. `ppr=0.5,mmr=0.7`); the keys are "
            "listed in docs/search.md."),
    Setting("search.calibrated", "", "LOREMAP_SEARCH_CALIBRATED",
            "What `loremap calibrate` last fitted (it writes this and the `coverage` of "
            "search.tuning): the day, the dataset and the abstention rates."),
    Setting("search.log_queries", True, "LOREMAP_LOG_QUERIES",
            "Whether the prompt hook and the MCP tools log each question and what the agent "
            "opened next, in .loremap/cache/queries.jsonl on this machine only (credentials "
            "redacted): what `loremap calibrate` fits the abstention threshold on without a "
            "dataset. false: nothing is logged, and the log is deleted at the next question."),
    Setting("search.embedder", "", "LOREMAP_EMBEDDER",
            "The embedding model of the vector list (empty: none; `loremap embed enable` sets "
            "it): `local` (all-MiniLM-L6-v2 from the `loremap[embed]` extra), a model "
            "downloaded by `loremap embed enable --model NAME`, a model folder's path (a "
            "relative one is read from the project's root), `endpoint:MODEL` (a server at "
            "embed.url), or `hash` (a test embedder)."),
    Setting("verify.judge", "", "LOREMAP_JUDGE",
            "The local model that judges `loremap verify` and the MCP verify tool (empty: none; "
            "`loremap judge enable --model NAME|PATH` sets it): a natural-language-inference "
            "cross-encoder downloaded by that command, or a model folder's path (a relative one "
            "is read from the project's root)."),
    Setting("embed.url", "", "LOREMAP_EMBED_URL",
            "The OpenAI-compatible embeddings server of `search.embedder = endpoint:MODEL` "
            "(e.g. http://localhost:11434/v1); its key is read from `LOREMAP_EMBED_API_KEY` "
            "only, never from config.toml."),
    Setting("embed.timeout_s", 30.0, "LOREMAP_EMBED_TIMEOUT_S",
            "Seconds to wait for the embeddings server before search continues lexical."),
    Setting("embed.workers", 0, "LOREMAP_EMBED_WORKERS",
            "Processes that run the model when `embed enable`, `reembed` or `index` embed many "
            "nodes (0: one per CPU, at most 4; 1: this process alone)."),
    Setting("embed.recall_batch", 64, "LOREMAP_EMBED_RECALL_BATCH",
            "Nodes without a vector that a search embeds before it answers (more wait for "
            "`loremap index` or `loremap reembed`, which embed them all)."),
    Setting("codemap.exclude", (), "LOREMAP_EXCLUDE",
            "More gitignore-style patterns of files the code map skips (comma-separated in the "
            "environment), on top of the built-in ones (vendored, generated, minified, locks)."),
    Setting("codemap.max_file_bytes", 1_000_000, "LOREMAP_MAX_FILE_BYTES",
            "Source files larger than this are left out of the code map."),
    Setting("codemap.workers", 0, "LOREMAP_WORKERS",
            "Processes that parse in parallel on a cold index (0: one per CPU, at most 4)."),
    Setting("codemap.history_commits", 1000, "LOREMAP_HISTORY_COMMITS",
            "Recent commits read for co-change edges and per-file commit subjects."),
    Setting("serve.tools", "lean", "LOREMAP_TOOLS",
            "The MCP tool catalogue: `lean` (recall, remember, read, map, handoff, forget, "
            "related) or `full` (adds timeline and stats)."),
    Setting("serve.max_request_bytes", 1_048_576, "LOREMAP_MAX_REQUEST_BYTES",
            "Largest HTTP request body `loremap serve --http` accepts (413 above it)."),
    Setting("serve.max_sessions", 1000, "LOREMAP_HTTP_MAX_SESSIONS",
            "Most MCP sessions `loremap serve --http` keeps open at once (each holds ~37 kB); "
            "a client opening one more gets 503 with Retry-After until one ends or expires."),
    Setting("serve.session_idle_s", 1800.0, "LOREMAP_HTTP_SESSION_IDLE_S",
            "Seconds an HTTP MCP session may go without a request in flight (an open GET "
            "stream counts as one) before it is closed; its id then answers 404 and the client "
            "opens a new session (0: never)."),
    Setting("serve.allowed_hosts", (), "LOREMAP_HTTP_ALLOWED_HOSTS",
            "More Host names `loremap serve --http` answers to besides loopback and the bound "
            "address (comma-separated in the environment). The keys are never read from "
            "config.toml: the tokens file is `--tokens FILE` or `LOREMAP_HTTP_TOKENS`, the "
            "single token `LOREMAP_HTTP_TOKEN`."),
    Setting("hooks.recall_budget", 1500, "LOREMAP_HOOK_BUDGET",
            "Token budget of what the prompt hook recalls into the agent's context (nothing at "
            "all when nothing is relevant)."),
    Setting("hooks.compact_at", 0, "LOREMAP_COMPACT_AT",
            "Context size (tokens) at which the agent compacts, for the meter hook (0: estimate "
            "it from Claude Code's own setting, see `loremap compaction show`)."),
    Setting("hooks.nudge_at", 0.8, "LOREMAP_NUDGE_AT",
            "Share of the compaction point at which the meter hook asks once to record what was "
            "learned and save a handoff."),
    Setting("hooks.explore_calls", 10, "LOREMAP_EXPLORE_CALLS",
            "Reads and searches after which the stop hook asks once to record what was learned, "
            "when nothing was recorded in the session (0: never)."),
    Setting("daemon.mode", "auto", "LOREMAP_DAEMON",
            "Whether hooks, `loremap serve` and CLI reads hand their work to the per-user daemon, "
            "starting it on first need ('auto'), or always work in their own process ('off'). "
            "The daemon serves every project: it reads this from the environment only."),
    Setting("daemon.idle_s", 1200.0, "LOREMAP_DAEMON_IDLE_S",
            "Seconds without a request after which the daemon exits (it starts again on the "
            "next need). Read from the environment that starts it."),
    Setting("mcp.handshake_timeout_s", 30.0, "LOREMAP_MCP_HANDSHAKE_TIMEOUT_S",
            "Seconds `loremap serve` (stdio) waits for the client's first message before it "
            "exits (a client that starts the server and never speaks)."),
)
_BY_NAME = {s.name: s for s in SETTINGS}


Coercible = SettingValue | tuple[float, ...]
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def coerce(raw: object, default: Coercible, separator: str = ",") -> Coercible:
    """`raw` (a TOML value, or the text of an environment variable or a command-line option)
    as a value of `default`'s type; `ValueError` naming what was expected otherwise.

    A tuple takes a list or `separator`-joined text; its items have the type of the default's
    items (text when the default is empty), and empty text items are dropped. The settings and
    the search engine's knobs (`search/config.py`) both read their values through this.
    """
    if isinstance(default, tuple):
        return _coerce_items(raw, default, separator)
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ValueError("expected true or false")
    if isinstance(raw, bool) and not isinstance(default, str):
        raise ValueError(f"expected {type(default).__name__}, not true/false")
    if isinstance(default, int):
        try:
            return int(str(raw).strip())
        except ValueError:
            raise ValueError("expected int") from None
    if isinstance(default, float):
        try:
            return float(str(raw).strip())
        except ValueError:
            raise ValueError("expected float") from None
    return str(raw)


def _coerce_items(raw: object, default: tuple[str, ...] | tuple[float, ...], separator: str
                  ) -> tuple[str, ...] | tuple[float, ...]:
    if isinstance(raw, str):
        parts: list[object] = [p.strip() for p in raw.split(separator)]
    elif isinstance(raw, list | tuple):
        parts = list(raw)
    else:
        raise ValueError("expected a list")
    if default and isinstance(default[0], float):
        if any(isinstance(p, bool) for p in parts):
            raise ValueError("expected numbers")
        try:
            return tuple(float(str(p)) for p in parts)
        except ValueError:
            raise ValueError("expected numbers") from None
    if not all(isinstance(p, str) for p in parts):
        raise ValueError("expected a list of strings")
    return tuple(str(p).strip() for p in parts if str(p).strip())


def _setting(setting: Setting, raw: object, origin: str) -> SettingValue:
    try:
        value = coerce(raw, setting.default)
    except ValueError as exc:
        raise InvalidInput(f"{origin}: bad value {raw!r} for {setting.name} ({exc})") from None
    if isinstance(value, tuple):
        return tuple(str(v) for v in value)  # a setting's lists are lists of text
    return value


class Settings:
    """Resolved setting values, looked up by name (`settings.get("index.busy_timeout_ms")`)."""

    __slots__ = ("values",)

    def __init__(self, values: Mapping[str, SettingValue] | None = None) -> None:
        self.values: Mapping[str, SettingValue] = dict(values or {})

    def get(self, name: str) -> SettingValue:
        return self.values.get(name, _BY_NAME[name].default)

    def get_int(self, name: str) -> int:
        value = self.get(name)
        assert isinstance(value, int)
        return value

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        assert isinstance(value, bool)
        return value

    def get_float(self, name: str) -> float:
        value = self.get(name)
        assert isinstance(value, (int, float))
        return float(value)

    def get_str(self, name: str) -> str:
        return str(self.get(name))

    def get_list(self, name: str) -> tuple[str, ...]:
        value = self.get(name)
        assert isinstance(value, tuple)
        return value


def load_settings(config_file: Path | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults, then the project's config.toml (if any), then `LOREMAP_*` variables."""
    env = os.environ if environ is None else environ
    values: dict[str, SettingValue] = {}
    if config_file is not None and config_file.is_file():
        import tomllib

        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{config_file}: not valid TOML ({exc})") from None
        for section, table in data.items():
            if not isinstance(table, dict):
                continue
            for key, raw in table.items():
                setting = _BY_NAME.get(f"{section}.{key}")
                if setting is not None:
                    values[setting.name] = _setting(setting, raw, str(config_file))
        if _has_password(str(values.get("store.url", ""))):
            raise InvalidInput(f"{config_file}: store.url holds a password and this file is "
                               "committed; set LOREMAP_DATABASE_URL instead, or use ~/.pgpass")
    for setting in SETTINGS:
        if setting.env in env and env[setting.env] != "":
            values[setting.name] = _setting(setting, env[setting.env], setting.env)
    return Settings(values)


def _has_password(url: str) -> bool:
    """Whether a database URL carries a password (`user:secret@host` or `password=`)."""
    credentials = url.split("://", 1)[-1].split("@", 1)[0] if "@" in url else ""
    return ":" in credentials and not credentials.endswith(":") or "password=" in url


# --- per-user paths -------------------------------------------------------------------------


def _xdg(var: str, fallback: str, environ: Mapping[str, str]) -> Path:
    value = environ.get(var, "")
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


class UserPaths(NamedTuple):
    """Where per-user state lives: the personal vault, logs and caches."""

    personal: Path
    logs: Path
    cache: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> UserPaths:
        env = os.environ if environ is None else environ
        home = env.get("LOREMAP_HOME", "")
        if home:
            root = Path(home).expanduser()
            return cls(root / "personal", root / "logs", root / "cache")
        data = _xdg("XDG_DATA_HOME", ".local/share", env) / "loremap"
        state = _xdg("XDG_STATE_HOME", ".local/state", env) / "loremap"
        cache = _xdg("XDG_CACHE_HOME", ".cache", env) / "loremap"
        return cls(data / "personal", state / "logs", cache)

    @property
    def models(self) -> Path:
        """Embedding models: the shipped one unpacked, the ones downloaded on request."""
        return self.personal.parent / "models"

    @property
    def state(self) -> Path:
        """Per-user state that is not a log: what loremap installed in agents' settings."""
        return self.logs.parent


# --- project discovery ----------------------------------------------------------------------


def find_project_root(start: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The nearest directory holding `.loremap/`, else the git root, else None.

    `LOREMAP_PROJECT_DIR` wins over discovery.
    """
    env = os.environ if environ is None else environ
    forced = env.get("LOREMAP_PROJECT_DIR", "")
    if forced:
        root = Path(forced).expanduser().resolve()
        if not root.is_dir():
            raise NotFound(f"LOREMAP_PROJECT_DIR={forced} is not a directory")
        return root
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / LOREMAP_DIR).is_dir():
            return candidate
    return git_root(start)


def project_settings(cwd: Path, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of the project around `cwd` (its config.toml, if it has one, then the
    environment), or the defaults and the environment outside any project."""
    root = find_project_root(cwd, environ)
    return load_settings(root / LOREMAP_DIR / CONFIG_FILE if root is not None else None,
                         environ)


def settings_markdown() -> str:
    """The settings reference, generated from `SETTINGS` (docs/settings.md)."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from loremap.config.SETTINGS by `python -m loremap.config`; "
        "do not edit by hand. -->",
        "",
        "Each setting is read from its environment variable, else from `.loremap/config.toml` "
        "(`[section]` then `key = value`), else the default.",
        "",
        "| setting | environment | default | what it does |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS:
        default = (", ".join(s.default) if isinstance(s.default, tuple) else
                   str(s.default).lower() if isinstance(s.default, bool) else s.default)
        lines.append(f"| `{s.name}` | `{s.env}` | `{default}` | {s.help} |")
    lines += [
        "",
        "Per-user directories: `LOREMAP_HOME` puts the personal vault, logs and caches under one "
        "directory (`personal/`, `logs/`, `cache/`). Without it they follow XDG: "
        "`$XDG_DATA_HOME/loremap/personal`, `$XDG_STATE_HOME/loremap/logs`, "
        "`$XDG_CACHE_HOME/loremap`.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(settings_markdown(), end="")
