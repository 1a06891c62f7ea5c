"""The keys of the shared HTTP server: a tokens file of named, role-bearing bearer tokens.

`loremap serve --http --tokens FILE` (or `LOREMAP_HTTP_TOKENS=FILE`) lets several clients in,
each with its own token, a name (the actor the audit records) and a role (`read-only` or
`read-write`). The file is TOML a person can read and edit:

    [[token]]
    name = "ci"
    role = "read-only"
    sha256 = "<64 hex digits>"
    created = "2026-05-01T10:00:00Z"

Only the SHA-256 of each token is kept, so the file is not a store of secrets (it may be read
by others; it must not be writable by them, which `load` checks, since whoever writes it lets
anyone in). The tokens are 256 random bits, so a plain hash is enough: there is nothing to
guess, and no slow password hash is needed. `loremap serve token add|list|revoke` manage the
file (the token is printed once, by `add`); a hand edit works as well. The server re-reads the
file when it changes (`Keyring`): a token removed from it is refused from the next request on,
without a restart, and a file that turns unreadable refuses every request until it is fixed.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from loremap.actor import READ_WRITE, ROLES, Caller
from loremap.errors import Conflict, InvalidInput, NotFound, UserError

log = logging.getLogger("loremap.mcp")

ENV_FILE = "LOREMAP_HTTP_TOKENS"  # the tokens file when `--tokens` is not given
ENV_TOKEN = "LOREMAP_HTTP_TOKEN"  # the single token of before: the read-write key `default`
DEFAULT_NAME = "default"
PREFIX = "lmk_"  # "loremap key": a token says what it is (the secret scanner knows it too)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HEX = re.compile(r"[0-9a-f]{64}")
_KEYS = ("name", "role", "sha256", "created")
_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*token[ \t]*\]\]", re.MULTILINE)
_EMPTY = hashlib.sha256(b"").hexdigest()
FILE_HEADER = """\
# The keys of `loremap serve --http --tokens FILE`: one [[token]] per client or person.
# role: read-only (recall, read, map, related, ...) or read-write (remember, forget, ...).
# Only each token's SHA-256 is kept; the token was printed once, by `loremap serve token add`.
# Remove a [[token]] (or run `loremap serve token revoke NAME`) to revoke it: the server
# re-reads this file when it changes.
"""


class Key(NamedTuple):
    """One entry of the tokens file."""

    name: str
    role: str
    sha256: str  # hex digest of the token
    created: str = ""

    @property
    def caller(self) -> Caller:
        return Caller(self.name, self.role)


def digest(token: str) -> str:
    """The hex SHA-256 of a token, as the tokens file keeps it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tokens_file(option: str | None, environ: Mapping[str, str]) -> Path | None:
    """The tokens file: `--tokens FILE`, else `LOREMAP_HTTP_TOKENS`, else None. Never from
    config.toml: a committed setting could let a repository's author in."""
    raw = option if option is not None else environ.get(ENV_FILE, "")
    return Path(raw).expanduser().absolute() if raw.strip() else None


# --- reading --------------------------------------------------------------------------------


def load(path: Path) -> tuple[Key, ...]:
    """The keys of the tokens file, or `UserError` naming the file and what is wrong."""
    return parse(_text(path), str(path))


def _text(path: Path) -> str:
    try:
        st = path.stat()
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such tokens file (create it with `loremap serve token add "
                       f"NAME --role ROLE --tokens {path}`)") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the tokens file ({exc.strerror})") from None
    if st.st_mode & 0o022:
        raise InvalidInput(f"{path}: the tokens file is writable by others, who could add a "
                           f"key of their own; run `chmod go-w {path}`")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: the tokens file is not UTF-8 text") from None


def parse(text: str, where: str) -> tuple[Key, ...]:
    """The keys of a tokens file's text (`where` names it in errors)."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{where}: not valid TOML ({exc})") from None
    extra = sorted(set(data) - {"token"})
    if extra:
        raise InvalidInput(f"{where}: unknown key {extra[0]!r} (the file holds [[token]] "
                           "tables only)")
    tables = data.get("token", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise InvalidInput(f"{where}: `token` must be [[token]] tables")
    keys = tuple(_key(table, n, where) for n, table in enumerate(tables, 1))
    _check_unique(keys, where)
    return keys


def _key(table: dict[str, object], n: int, where: str) -> Key:
    name = table.get("name")
    label = f"token {name!r}" if isinstance(name, str) else f"token {n}"
    extra = sorted(set(table) - set(_KEYS))
    if extra:
        raise InvalidInput(f"{where}: {label}: unknown key {extra[0]!r} (the keys are "
                           f"{', '.join(_KEYS)})")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(f"{where}: {label}: name must be 1-64 letters, digits or ._@- "
                           "(starting with a letter or digit)")
    role = table.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{where}: {label}: unknown role {role!r} (read-only or "
                           "read-write)")
    sha = table.get("sha256")
    if not isinstance(sha, str) or not _HEX.fullmatch(sha.lower()):
        raise InvalidInput(f"{where}: {label}: sha256 must be the token's SHA-256, 64 hex "
                           "digits (`printf %s TOKEN | sha256sum`)")
    if sha.lower() == _EMPTY:
        raise InvalidInput(f"{where}: {label}: sha256 is the hash of an empty token")
    created = table.get("created", "")
    return Key(name, str(role), sha.lower(), str(created))


def _check_unique(keys: tuple[Key, ...], where: str) -> None:
    names: dict[str, str] = {}
    hashes: dict[str, str] = {}
    for key in keys:
        folded = key.name.lower()
        if folded in names:
            raise InvalidInput(f"{where}: token {key.name!r} appears twice (names are unique, "
                               "whatever their case: the audit tells callers apart by them)")
        if key.sha256 in hashes:
            raise InvalidInput(f"{where}: tokens {hashes[key.sha256]!r} and {key.name!r} are "
                               "the same token (give each client its own)")
        names[folded] = key.name
        hashes[key.sha256] = key.name


# --- the server's side ----------------------------------------------------------------------


class Unreadable(UserError):
    """The tokens file cannot be used as it is now: every request is refused until it is."""


class Keyring:
    """The keys a server accepts: the tokens file, re-read when its stat changes, and the single
    token of `LOREMAP_HTTP_TOKEN` as the read-write key `default`. Built once at start (which
    raises `UserError` for a file that cannot serve), asked on every request."""

    def __init__(self, path: Path | None, token: str = "") -> None:
        self.path = path
        self.fixed = (Key(DEFAULT_NAME, READ_WRITE, digest(token)),) if token else ()
        self._stamp: tuple[int, ...] | None = None
        self._keys: tuple[Key, ...] = ()
        self._failed: tuple[int, ...] | None = None
        if path is not None:
            self._keys = self._read(path)

    def keys(self) -> tuple[Key, ...]:
        """Every key accepted now (`Unreadable` when the file is gone or broken)."""
        if self.path is None:
            return self.fixed
        try:
            st = self.path.stat()
        except OSError as exc:
            raise self._unreadable((), f"{self.path}: {exc.strerror}") from None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
        if stamp != self._stamp:
            try:
                self._keys = self._read(self.path)
            except UserError as exc:
                raise self._unreadable(stamp, str(exc)) from None
            self._failed = None
            if trusted(st.st_mtime_ns):
                self._stamp = stamp
        return self._keys

    def caller(self, presented: str) -> Caller | None:
        """The caller whose token this is, or None. Every key is compared, in constant time,
        whichever matches: how long it takes says nothing about which one did."""
        wanted = digest(presented)
        found: Key | None = None
        for key in self.keys():
            if hmac.compare_digest(key.sha256, wanted):
                found = key
        return found.caller if found is not None else None

    def describe(self) -> str:
        """What the server says it requires, e.g. `bearer tokens: 3 from FILE, 1 read-only`."""
        if self.path is None:
            return "bearer token required"
        keys = self.keys()
        read_only = sum(1 for k in keys if not k.caller.writes)
        fixed = " (LOREMAP_HTTP_TOKEN as 'default' among them)" if self.fixed else ""
        return f"bearer tokens: {len(keys)} from {self.path}{fixed}, {read_only} read-only"

    def _read(self, path: Path) -> tuple[Key, ...]:
        keys = (*load(path), *self.fixed)
        _check_unique(keys, f"{path} (with LOREMAP_HTTP_TOKEN as {DEFAULT_NAME!r})"
                      if self.fixed else str(path))
        return keys

    def _unreadable(self, stamp: tuple[int, ...], why: str) -> Unreadable:
        # Trigger: the file went missing or stopped parsing (a half-saved edit, a typo).
        # Why: keeping the old keys would keep a token the edit meant to revoke.
        # Outcome: every request is refused (503) until the file reads again; logged once.
        self._stamp = None
        if stamp != self._failed:  # () for a file gone: logged once too
            log.warning("every request is refused until the tokens file reads again: %s", why)
        self._failed = stamp
        return Unreadable(why)


def keyring(path: Path | None, token: str) -> Keyring | None:
    """The keys of a server started with the tokens file `path` and the single token `token`
    (either may be missing), or None when it has neither: then nobody needs a key."""
    return Keyring(path, token) if path is not None or token else None


def trusted(mtime_ns: int) -> bool:
    """Whether a stat is old enough to stand for the file's content (`vault.fs.trusted_mtime`:
    a rewrite within the clock's tick, of the same size, would keep it)."""
    from loremap.vault.fs import trusted_mtime

    return trusted_mtime(mtime_ns) != 0


# --- the commands' side ---------------------------------------------------------------------


def add(path: Path, name: str, role: str) -> tuple[Key, str]:
    """Add a key named `name` to the tokens file (created if need be); the key and its token,
    which is shown once and kept nowhere."""
    import datetime as dt
    import secrets

    if not _NAME.fullmatch(name):
        raise InvalidInput(f"token name {name!r}: 1-64 letters, digits or ._@- (starting with "
                           "a letter or digit)")
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r} (read-only or read-write)")
    token = PREFIX + secrets.token_urlsafe(32)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    key = Key(name, role, digest(token), now)
    with _editing(path) as (text, keys):
        taken = next((k.name for k in keys if k.name.lower() == name.lower()), None)
        if taken is not None:
            raise Conflict(f"{path}: a token named {taken!r} exists already (revoke it first, "
                           "or choose another name)")
        entry = (f'[[token]]\nname = "{name}"\nrole = "{role}"\nsha256 = "{key.sha256}"\n'
                 f'created = "{now}"\n')
        base = text if text else FILE_HEADER
        _write(path, f"{base.rstrip()}\n\n{entry}" if base.strip() else entry, (*keys, key))
    return key, token


def revoke(path: Path, name: str) -> Key:
    """Remove the key named `name` from the tokens file: the server refuses its token from
    the next request on."""
    with _editing(path) as (text, keys):
        index = next((i for i, k in enumerate(keys) if k.name.lower() == name.lower()), None)
        if index is None:
            known = ", ".join(k.name for k in keys) or "none"
            raise NotFound(f"{path}: no token named {name!r} (the tokens: {known})")
        headers = [m.start() for m in _HEADER.finditer(text)]
        if len(headers) != len(keys):
            raise Conflict(f"{path}: cannot tell where token {name!r} ends; remove its "
                           "[[token]] table by hand")
        start = _comments_above(text, headers[index])
        end = _comments_above(text, headers[index + 1]) if index + 1 < len(headers) \
            else len(text)
        _write(path, text[:start] + text[end:], keys[:index] + keys[index + 1:])
        return keys[index]


def _comments_above(text: str, start: int) -> int:
    """Where the comment lines directly above a table header begin (they are the table's)."""
    lines = text[:start].splitlines(keepends=True)
    while lines and lines[-1].lstrip().startswith("#"):
        start -= len(lines.pop())
    return start


@contextmanager
def _editing(path: Path) -> Iterator[tuple[str, tuple[Key, ...]]]:
    """The tokens file's text and keys (none yet: empty), under its lock (a sibling
    `.NAME.lock`, since a rename replaces the file itself), for one edit."""
    from loremap.vault.fs import file_lock

    with file_lock(path.with_name(f".{path.name}.lock"), 10.0):
        if not path.exists():
            yield "", ()
            return
        text = _text(path)
        yield text, parse(text, str(path))


def _write(path: Path, text: str, expected: tuple[Key, ...]) -> None:
    """Replace the tokens file with `text` once it reads back as exactly `expected`."""
    from loremap.vault.fs import atomic_write

    if parse(text, str(path)) != expected:
        raise Conflict(f"{path}: the edit would not read back as intended; edit it by hand")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"))
