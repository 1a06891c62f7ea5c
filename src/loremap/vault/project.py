"""The `.loremap/` folder of a project: what `init` creates and `doctor` expects to find."""

from __future__ import annotations

from pathlib import Path

from loremap.vault.fs import atomic_write
from loremap.vault.layout import HANDOFFS_DIR, NOTES_DIR

INDEX_FILE = "index.sqlite"
GITIGNORE = """\
# Derived by loremap; rebuilt from the notes with `loremap reindex`.
index.sqlite
index.sqlite-*
sessions/
cache/
logs/
.lock
.*.tmp
"""
CONFIG_TEMPLATE = """\
# loremap project settings (committed with the project).
# Every setting and its environment variable: docs/settings.md in the loremap repository.

[text]
# Languages of the notes: the first picks the stemmer; stopwords of all are dropped.
languages = ["en"]

[vault]
# Largest note body accepted, in bytes.
max_note_bytes = 262144
"""


def scaffold(loremap_dir: Path) -> list[str]:
    """Create what is missing of `.loremap/` (never overwriting); return what was created."""
    created: list[str] = []
    for sub in ("", NOTES_DIR, HANDOFFS_DIR):
        path = loremap_dir / sub
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            created.append(f"{path.name}/" if sub else f"{loremap_dir.name}/")
    for name, content in (("config.toml", CONFIG_TEMPLATE), (".gitignore", GITIGNORE)):
        path = loremap_dir / name
        if not path.exists():
            atomic_write(path, content.encode("utf-8"))
            created.append(name)
    return created


def missing_parts(loremap_dir: Path) -> list[str]:
    """What `scaffold` would create that the project needs now. The notes/ and handoffs/
    folders are not counted: they are made when first written, and git keeps no empty folder,
    so a teammate's fresh clone lacks them without anything being wrong."""
    return [n for n in ("config.toml", ".gitignore") if not (loremap_dir / n).exists()]
