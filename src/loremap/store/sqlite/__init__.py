"""The embedded default store: SQLite with FTS5, one file per project."""

from __future__ import annotations

from loremap.store.sqlite.store import SqliteStore, fts5_available

__all__ = ["SqliteStore", "fts5_available"]
