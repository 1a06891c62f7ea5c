"""The knobs of the search engine, as one immutable record that `loremap eval --compare` can
vary ("ppr=0", "mmr=0.7", "weights=5:1:3:3:2:1", or a TOML file with a `[search]` table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from loremap.config import coerce
from loremap.errors import InvalidInput

# Default bm25() column weights: title, body, tags, symbols, path, content (the FTS columns).
DEFAULT_WEIGHTS = (5.0, 1.0, 3.0, 6.0, 2.0, 1.0)
# How much a word of each part of a pasted issue counts: title, prose, code, output
# (search/issue.py; noise counts nothing).
DEFAULT_ISSUE = (2.0, 1.0, 1.0, 1.0)


class SearchConfig(NamedTuple):
    """Weights of the candidate lists in the fusion (0 turns a list off), and their limits."""

    bm25: float = 1.0
    entities: float = 1.0
    ppr: float = 1.0
    vectors: float = 0.5  # the vector list among notes
    sections: float = 1.0  # code files by their best-matching section
    notes: float = 1.0  # notes ranked alone, when code competes with them
    title: float = 1.0  # an issue's title searched alone
    rrf_k: int = 30  # Reciprocal Rank Fusion constant
    pool: int = 50  # candidates each list contributes
    max_terms: int = 64  # a long query keeps its terms of highest tf x IDF
    query_tf: int = 10  # a term repeated in the question counts up to this many times
    max_postings: int = 4000  # the commonest terms are dropped beyond this many postings
    common_idf: bool = True  # a word in half the nodes or more still counts (Lucene's IDF)
    seeds: int = 3  # how many top bm25/entity hits seed the PPR walk
    alpha: float = 0.3  # PPR restart probability: higher stays closer to the seeds
    pushes: int = 20  # PPR forward pushes at most (bounds its work whatever the graph)
    code_edges: float = 1.0  # weight of imports, shared names and co-change in the walk
    ppr_floor: float = 0.02  # PPR mass (of the seeds' 1.0) a node reached needs to count
    entity_focus: int = 1  # entities named before the entity list's weight is spread
    max_definers: int = 5  # a symbol defined in more files than this is not an entity
    mmr: float = 0.0  # MMR trade-off (relevance share); 0 turns MMR off
    abstain: bool = True  # answer "nothing relevant" when no best match covers the question
    coverage: float = 0.3  # share of the question's IDF mass one of the best matches must hold
    meaning: float = 0.5  # or a vector match at least this close (cosine) answers instead
    code_vectors: float = 0.5  # the vector list among code, when notes are candidates too
    code_alone: float = 3.0  # the vector list among code, when no note is a candidate
    issue_vectors: float = 0.5  # the vector lists' weight for a pasted issue, times theirs
    weights: tuple[float, ...] = DEFAULT_WEIGHTS
    aside: float = 0.5  # share of its score a test, example or docs file keeps (aside.py)
    track: float = 1.0  # how much a procedure's track record moves it (track.py; 0: not)
    issue: tuple[float, ...] = DEFAULT_ISSUE  # weight of an issue's title, prose, code, output

    @classmethod
    def parse(cls, spec: str) -> SearchConfig:
        """A config from "key=value,key=value" (unknown keys refused) or a TOML file path."""
        spec = spec.strip()
        if not spec:
            return cls()
        if spec.endswith(".toml") or Path(spec).is_file():
            return cls.from_toml(Path(spec))
        values: dict[str, str] = {}
        for part in spec.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise InvalidInput(f"search config {part.strip()!r}: use key=value "
                                   f"(keys: {', '.join(cls._fields)})")
            values[key.strip()] = value.strip()
        return cls.build(values)

    @classmethod
    def from_toml(cls, path: Path) -> SearchConfig:
        import tomllib

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InvalidInput(f"{path}: cannot read the search config ({exc})") from None
        table = data.get("search", data)
        if not isinstance(table, dict):
            raise InvalidInput(f"{path}: [search] must be a table")
        return cls.build(table)

    @classmethod
    def build(cls, values: dict[str, Any]) -> SearchConfig:
        defaults = cls()
        out: dict[str, Any] = {}
        for key, raw in values.items():
            if key not in cls._fields:
                raise InvalidInput(f"unknown search config key {key!r}: use one of "
                                   f"{', '.join(cls._fields)}")
            default = getattr(defaults, key)
            try:
                out[key] = coerce(raw, default, separator=":")
            except ValueError:
                raise InvalidInput(f"search config {key}={raw!r}: expected "
                                   f"{type(default).__name__}") from None
        config = cls(**{**defaults._asdict(), **out})
        if len(config.weights) != len(DEFAULT_WEIGHTS):
            raise InvalidInput(f"search config weights: give {len(DEFAULT_WEIGHTS)} numbers "
                               "(title:body:tags:symbols:path:content)")
        if len(config.issue) != len(DEFAULT_ISSUE) or min(config.issue) < 0:
            raise InvalidInput(f"search config issue: give {len(DEFAULT_ISSUE)} numbers of 0 "
                               "or more (title:prose:code:output)")
        return config

    def describe(self) -> str:
        """The settings that differ from the defaults, as `parse` reads them."""
        defaults = SearchConfig()
        parts = []
        for key in self._fields:
            value = getattr(self, key)
            if value != getattr(defaults, key):
                shown = (":".join(f"{w:g}" for w in value) if key in ("weights", "issue")
                         else value)
                parts.append(f"{key}={shown}")
        return ",".join(parts) or "defaults"
