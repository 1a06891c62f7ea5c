"""The prior against tests, examples and docs when the question is not about them.

A test, an example or a page of docs repeats the names and words of the code it exercises or
describes, often more than the code itself: asked `jsonify`, a plain ranking put a test and an
example before the module defining it. Unless the question speaks of them, such files keep a
share (`SearchConfig.aside`) of their fused score; a question about tests spares the tests
only. Files are told apart by their folder or their name, the conventions of most projects.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from loremap.text import Analyzer

# The words by which a question speaks of each kind (analysed by the engine's analyzer).
WORDS = {"test": "test tests testing tested fixture fixtures conftest unittest pytest",
         "example": "example examples sample samples demo demos",
         "docs": "doc docs documentation"}
_ASIDE = re.compile(r"(?:^|/)(?:(?P<test>tests?|testing)/|(?P<example>examples?|samples?|"
                    r"demos?)/|(?P<docs>docs?|documentation)/)"
                    r"|(?P<testfile>(?:^|/)(?:test_[^/]*|[^/]*_tests?\.py|conftest\.py)$)")


def kind(path: str) -> str | None:
    """"test", "example" or "docs" for a file that tests, shows or documents the code (by
    its folder or its name), else None."""
    match = _ASIDE.search(path)
    if match is None:
        return None
    return "test" if match.group("testfile") else match.lastgroup


def spoken(analyzer: Analyzer) -> dict[str, frozenset[str]]:
    """Each kind's words as `analyzer`'s tokens."""
    return {name: frozenset(analyzer.tokens(words)) for name, words in WORDS.items()}


def reweigh(fused: list[tuple[str, float]], files: Collection[str], share: float,
            exempt: Collection[str]) -> list[tuple[str, float]]:
    """`fused` (id, score) with the scores of the test, example and docs files among `files`
    times `share`, except those of the kinds in `exempt`; re-sorted, ties in their order."""
    def weight(node_id: str) -> float:
        found = kind(node_id) if node_id in files else None
        return share if found is not None and found not in exempt else 1.0

    scored = [(node_id, score * weight(node_id)) for node_id, score in fused]
    order = {node_id: n for n, (node_id, _) in enumerate(scored)}
    return sorted(scored, key=lambda pair: (-pair[1], order[pair[0]]))
