"""What parsing one source file yields (the records live in `loremap.model.code`)."""

from __future__ import annotations

from loremap.model.code import Definition, FileFacts

__all__ = ["Definition", "FileFacts"]
