"""The one exception tree of loremap.

Library code raises these; only the CLI (and later the MCP server) converts them, once. A
`UserError` is something the person or agent can fix: it carries a one-line, actionable message
and the CLI exits 1 with it. Anything that is not a `LoremapError` is a bug: exit 3 and a log.

    LoremapError
    ├── UserError                 exit 1, one line
    │   ├── InvalidInput          bad arguments, ids, titles, sizes
    │   ├── NotFound              no such note / project
    │   ├── Conflict              the thing already exists or disagrees with the vault
    │   ├── Forbidden             a write asked for by a caller whose key is read-only
    │   ├── SecretFound           a credential in text that was about to be written
    │   ├── MalformedNote         a note file that cannot be parsed (names file and line)
    │   ├── UnsafePath            a file or folder of a vault that is a symlink out of it
    │   ├── IndexLocked           another writer held the index past busy_timeout
    │   ├── EmbedderUnavailable   the embedding model or endpoint cannot answer now
    │   └── StoreError            the index is unusable (corrupt, unreachable, ...)
    │       └── SchemaTooNew      written by a newer loremap: never set aside as corrupt
"""

from __future__ import annotations


class LoremapError(Exception):
    """Base of every error loremap raises on purpose."""


class UserError(LoremapError):
    """An error the user can act on; its message is one line."""


class InvalidInput(UserError):
    """An argument, id, title or body that loremap refuses."""


class NotFound(UserError):
    """A note, file or project that does not exist."""


class Conflict(UserError):
    """The operation disagrees with what is already there."""


class Forbidden(UserError):
    """A change to the memory asked for by a caller who may only read (`use/access.py`)."""


class SecretFound(UserError):
    """Text about to be written contains something that looks like a credential."""


class MalformedNote(UserError):
    """A note file whose frontmatter or encoding cannot be read."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class UnsafePath(UserError):
    """A path under `.loremap/` or the personal vault that loremap will not follow: a file that
    is a symlink, or a folder that leads out of the repository (or the personal vault)."""


class IndexLocked(UserError):
    """Another process held the index's write lock for longer than busy_timeout."""


class EmbedderUnavailable(UserError):
    """An embedder that cannot be used as configured: its extra is not installed, its model
    does not load or download, or its endpoint times out, refuses or answers wrongly. Search
    catches it and continues lexical (`degraded`); a command that needs vectors exits 1."""


class DiskFull(UserError):
    """The disk holding the index or the vault has no room left (nothing is set aside)."""


class StoreError(UserError):
    """The index cannot be used as it is (corrupt file, unknown schema version)."""


class SchemaTooNew(StoreError):
    """The index or database has a schema version newer than this loremap knows: it belongs
    to a newer copy of loremap, so it is refused as it is, never rebuilt over."""
