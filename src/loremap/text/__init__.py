"""Text analysis shared by the index and its queries: search tokens and token budgets.

Both live here because both must stay cheap enough for the hook path: standard library and
PyStemmer only, regexes compiled once at import.
"""

from __future__ import annotations

from loremap.text.analyzer import Analyzer
from loremap.text.tokens import estimate_tokens

__all__ = ["Analyzer", "estimate_tokens"]
