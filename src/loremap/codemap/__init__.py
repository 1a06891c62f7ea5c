"""The code map: what the repository's code is, computed from the repository alone.

discover files -> parse (tree-sitter tag queries, regex fallback) -> resolve imports to files ->
graph (imports, references, git co-change) -> rank (PageRank) -> render (map.md, module pages).
"""

from __future__ import annotations
