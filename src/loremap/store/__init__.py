"""The index behind the vault: the protocols every backend implements, and the backends.

The index is derived: it can always be dropped and rebuilt from the vault. The layers above
talk to it only through these protocols (`store/protocols.py`), so that SQLite (the embedded
default, `store/sqlite`) and PostgreSQL (shared by a team, `store/postgres`) stay
interchangeable and pass the same contract tests. What both build alike is in `rows.py`;
neither backend imports the other. The audit chain (`AuditLog`) is kept by the backends too,
but it is not derived: nothing here ever drops it (docs/audit.md).
"""

from __future__ import annotations

from loremap.store.protocols import (
    Append,
    AuditLog,
    CodeStore,
    IndexStore,
    SearchStore,
    Store,
    VectorStore,
)
from loremap.store.rows import FileRow

__all__ = ["SCHEMA_VERSION", "Append", "AuditLog", "CodeStore", "FileRow", "IndexStore",
           "SearchStore", "Store", "VectorStore"]

SCHEMA_VERSION = 7
