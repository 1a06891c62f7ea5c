"""Hybrid search over notes and code: BM25, named entities, Personalized PageRank and (with an
embedder) vectors, fused by Reciprocal Rank Fusion and packed into a token budget."""

from loremap.search.config import SearchConfig
from loremap.search.engine import Engine, Recall, Request
from loremap.search.render import Item

__all__ = ["Engine", "Item", "Recall", "Request", "SearchConfig"]
