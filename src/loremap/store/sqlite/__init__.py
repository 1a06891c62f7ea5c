"""The embedded default store: SQLite with FTS5, one file per project."""

from __future__ import annotations

from loremap.store.sqlite.store import SqliteStore, fts5_available, set_aside

__all__ = ["SqliteStore", "fts5_available", "set_aside"]
