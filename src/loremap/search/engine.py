"""The search engine: candidate lists fused by Reciprocal Rank Fusion, packed into a budget.

One `recall` serves `loremap search`, the MCP `recall` tool and the prompt hook:

1. analyse the query and the caller's `terms` alike (terms are the agent's own expansion); a
   pasted issue is read as its parts first (`issue.py`: title, prose, code and output weighed,
   noise dropped); a long query keeps its `max_terms` terms of highest tf x IDF (an issue's
   title first), then terms are kept rarest first while their postings fit `max_postings`,
   so neither a pasted issue nor a large index makes a question cost more than a bounded
   amount;
2. candidate lists: **bm25** (FTS5 with column weights), **notes** (the bm25 ranking of the
   notes holding most of the question's terms, when code competes with them), **entities**
   (paths, file names, dotted modules, code-looking names, note ids, titles and aliases written
   in the question, the files of a traceback deepest first), **title** (an issue's title
   searched alone),
   **sections** (code files ranked by their best-matching section: a run of definitions,
   so a long file's relevant function is not drowned by the rest of the file), **ppr**
   (Personalized PageRank by local push from the top of bm25 and entities; an issue's walk
   from its entities alone) and **vectors**
   (only with an embedder);
3. fuse with RRF (k = 30, a weight per list); tests, examples and docs keep `aside` of their
   score unless the question speaks of them; optionally diversify with MMR;
4. filters (kind, type, status, path prefix, as-of date) apply inside every list;
5. render each item (what it is, where it lives, why it is here, ⚠ when the files a note
   describes changed since; a file's definitions the question is about first) and pack the
   best into the token budget.

Abstention: the answer is empty ("nothing relevant in memory") unless the question names an
entity, or one of the best text matches holds at least `coverage` of the question's IDF mass,
each word weighing its IDF in this project's index and a word the index has never seen weighing
like the rarest word (short questions only: a pasted log holds names no index knows). A prompt
made only of conversational replies ("yes", "continue") is not searched. See docs/search.md for
the rates measured on answerable and unanswerable questions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

from loremap.model.search import Filters, NodeRow, SymbolRow, TextQuery
from loremap.search import aside, entities, issue, language, ppr, track
from loremap.search.config import SearchConfig
from loremap.search.embed import Early, Embedder, Source, matched_lines, nearest
from loremap.search.fuse import mmr, rrf
from loremap.search.render import Item, Packed, definitions, file_snippet, pack, render, snippet
from loremap.store import SearchStore  # the engine's reads: declared below it
from loremap.text import Analyzer
from loremap.text.chatter import CHATTER_WORDS

Stale = Callable[[NodeRow], list[str]]


class Request(NamedTuple):
    """A search. Empty `kinds`/`types`/`paths` mean any; `history` adds superseded notes;
    `as_of` (YYYY-MM-DD) asks what was valid that day; `budget` None means no token limit."""

    query: str
    terms: Sequence[str] = ()
    kinds: Sequence[str] = ()
    types: Sequence[str] = ()
    statuses: Sequence[str] = ()
    paths: Sequence[str] = ()
    as_of: str | None = None
    history: bool = False
    budget: int | None = 1500
    limit: int = 10


class Recall(NamedTuple):
    """What a recall found: the packed items, or why there is nothing."""

    items: list[Item]
    tokens: int
    left_out: int
    abstained: bool
    reason: str
    terms: tuple[str, ...]
    seconds: float


class Candidates(NamedTuple):
    """The fused ranking (id, score) best first, the rows of those ids, why each is there, the
    query analysis, the entities named and the symbols named per file."""

    fused: list[tuple[str, float]]
    rows: dict[str, NodeRow]
    why: dict[str, list[str]]
    query: QueryTerms
    named: set[str]
    symbols: dict[str, list[SymbolRow]]
    text: set[str] = set()  # ids the text lists (bm25, notes, sections) found
    closest: float = 0.0  # the best cosine of the vector list's nodes (0: no vectors)
    lists: Mapping[str, Sequence[str]] = {}  # each candidate list's ids, best first

    def placed(self, node_id: str) -> tuple[tuple[str, int], ...]:
        """The candidate lists holding `node_id`, each with its rank there (1 the best): what
        a person asks of an item to see why it came (the dashboard's search shows it)."""
        return tuple((name, list(ids).index(node_id) + 1)
                     for name, ids in self.lists.items() if node_id in ids)


class Signal(NamedTuple):
    """What abstention reads of a question: the largest share of its IDF mass one of the best
    text matches holds (1.0 when a named entity or a close vector answers it), or the reason
    it is never answered whatever the threshold (`always`)."""

    coverage: float
    always: str = ""


class QueryTerms(NamedTuple):
    terms: tuple[str, ...]  # searched with (known to the index, at most max_terms)
    dropped: int  # terms left out of a long query
    dfs: dict[str, int]  # document frequency of each term
    chatter: bool = False  # the question is only a conversational reply ("yes", "continue")
    tf: dict[str, int] = {}  # how often each term occurs in the question and terms
    mass: dict[str, float] = {}  # IDF of each word of a short question (see `coverage`)
    conjunctive: bool = False  # every word too common alone: nodes holding all of them
    named: str = ""  # an issue's text without its noise, where entities are read ("": all)
    title: tuple[str, ...] = ()  # an issue's title terms the index holds
    issue: bool = False  # the question is a pasted issue, read as its parts


# Questions of up to this many distinct words get exact document counts at once; longer texts
# are counted up to `_FIRST_CAP` first (a pasted issue holds a hundred words, most common).
_EXACT_WORDS = 16
_FIRST_CAP = 256
_ALL_OF = 4  # words an all-common question is searched with, all at once
_JUDGED = 5  # the best text matches whose coverage of the question decides an abstention
_POOLED_NOTES = 10  # notes in the bm25 pool that spare the notes list its own search
_NOTE_TERMS = 3  # a note in the notes list holds this many of a long question's terms
_LINED = 10  # the best files a vector match is placed in (each a file read): a first screen


def statuses_for(request: Request) -> tuple[str, ...]:
    """Superseded, archived and quarantined notes are never current: only asked-for statuses,
    history or an as-of date bring superseded ones back (and they are marked)."""
    if request.statuses:
        return tuple(request.statuses)
    if request.history or request.as_of:
        return ("active", "superseded")
    return ("active",)


def question_text(request: Request, named: str) -> str:
    """The text of `request` that its entities are read from and its vector is embedded from:
    a pasted issue's text without its noise (`named`, `QueryTerms.named`: version dumps,
    template headings and prompts dropped; the encoder reads only its first 256 word pieces,
    which the noise would fill), else the question with its terms."""
    return named or " ".join([request.query, *request.terms])


def idf(df: int, count: int) -> float:
    """BM25's inverse document frequency of a term held by `df` of `count` nodes."""
    return math.log(1 + (count - df + 0.5) / (df + 0.5))


class Engine:
    def __init__(self, store: SearchStore, analyzer: Analyzer,
                 config: SearchConfig | None = None, embedder: Embedder | None = None,
                 stale: Stale | None = None, source: Source | None = None) -> None:
        self.store = store
        self.analyzer = analyzer
        self.config = config or SearchConfig()
        self.embedder = embedder
        self.stale = stale
        self.source = source  # a repository file's text: where a vector matched it
        # Conversational replies (text/chatter.py) as this analyzer's tokens: a question made
        # only of them is not searched. Applied to queries only; the index keeps every word.
        self.chatter = frozenset(analyzer.tokens(" ".join(CHATTER_WORDS)))
        self.aside_words = aside.spoken(analyzer)
        self.language_names = language.tokens(analyzer)
        self._language_files: tuple[int, dict[str, int]] | None = None  # (nodes, counts)

    # --- analysis ---------------------------------------------------------------------------

    def analyse(self, request: Request) -> QueryTerms:
        tf, question, title, named = self._counts(request)
        words = list(tf)
        if not words:
            return QueryTerms((), 0, {})
        if all(w in self.chatter for w in words):
            return QueryTerms((), 0, {}, chatter=True)
        count = self.store.node_count()
        # Counted up to just past the budget: a term beyond it is dropped whatever its count.
        # A long text's hundred words are first counted up to a small cap; only the common ones
        # the budget may still take are counted further (below).
        full = self.config.max_postings + 1
        cap = full if len(words) <= _EXACT_WORDS else _FIRST_CAP
        dfs = self.store.doc_freqs(words, cap)
        # A word naming the language of the code is held by each file in it (language.py):
        # never searched while those files are half the nodes; its IDF mass counts them.
        spoken = self._languages(words, count)
        known = [t for t in words if dfs[t] > 0 and 2 * spoken.get(t, 0) < count]
        dropped = 0
        if len(known) > self.config.max_terms:
            # The terms a long text repeats and the index rarely holds say most about it.
            def weight(term: str) -> float:
                return min(tf[term], self.config.query_tf) * idf(dfs[term], count)

            # An issue's title says what it is about, in the project's own common words.
            ranked = sorted(known, key=lambda t: (t not in title, -weight(t)))
            keep = set(ranked[: self.config.max_terms])
            dropped = len(known) - len(keep)
            known = [t for t in known if t in keep]
        # FTS5 scores every node holding any term: the common words of a large index would
        # make it score most of the index. Rarest first, terms are kept while their postings
        # (times their repeats in the match) fit `max_postings`; what is dropped is the
        # commonest (lowest-IDF) words.
        bounded = self._affordable(known, dfs, tf, self.config.max_postings, cap, full)
        conjunctive = False
        if not bounded and len(known) >= 2:
            # Every word is in too many nodes to search alone; together they may pin a few
            # down. FTS5 walks an AND by skipping through the lists, so the rarest words are
            # searched all at once instead.
            for term in known:
                if dfs[term] >= cap < full:
                    dfs[term] = self.store.doc_freqs([term], full)[term]
            bounded = sorted(known, key=lambda t: dfs[t])[:_ALL_OF]
            conjunctive = True
        if len(bounded) < len(known):
            dropped += len(known) - len(bounded)
            kept = set(bounded)
            known = [t for t in known if t in kept]
        asked = set(question)
        extra = [t for t in words if t not in asked and dfs[t] > 0]
        # A pasted issue or log holds names no index knows; coverage speaks of short questions.
        held = {**dfs, **{t: max(dfs.get(t, 0), n) for t, n in spoken.items()}}
        mass = (self._mass([*question, *extra], held, count)
                if len(question) <= self.config.max_terms else {})
        return QueryTerms(tuple(known), dropped, dfs, tf=tf, mass=mass,
                          conjunctive=conjunctive, named=named,
                          title=tuple(t for t in title if dfs.get(t, 0) > 0),
                          issue=issue.looks_like_issue(request.query))

    def _counts(self, request: Request) -> tuple[dict[str, int], list[str], set[str], str]:
        """How much each token of the question and terms counts, the question's own terms,
        the terms of its title and the text its entities are read from. A pasted issue
        (three lines or more) is read as its parts (`issue.read`), each word counting its
        part's weight (`issue`) and noise nothing; any other question counts each word once."""
        if not issue.looks_like_issue(request.query):
            tf: dict[str, int] = {}
            for token in self.analyzer.tokens(" ".join([request.query, *request.terms])):
                tf[token] = tf.get(token, 0) + 1
            return tf, self.analyzer.terms(request.query), set(), ""
        counts: dict[str, float] = {}
        weights = dict(zip(issue.KINDS, self.config.issue, strict=True))
        title: set[str] = set()
        kept: list[str] = []
        for part in issue.read(request.query):
            weight = weights.get(part.kind, 0)
            if weight <= 0:
                continue
            kept.append(part.text)
            tokens = self.analyzer.tokens(part.text)
            for token in tokens:
                counts[token] = counts.get(token, 0.0) + weight
            if part.kind == "title":
                title.update(tokens)
        question = self.analyzer.terms("\n".join(kept))
        for token in self.analyzer.tokens(" ".join(request.terms)):
            counts[token] = counts.get(token, 0.0) + weights["prose"]
        tf = {token: max(1, round(n)) for token, n in counts.items()}
        return tf, question, title, "\n".join([*kept, *request.terms])

    def _languages(self, words: Sequence[str], count: int) -> dict[str, int]:
        """The words of the question naming a language of the project's code -> how many
        files are in it (the counts are read again when the index's node count changes)."""
        if not any(w in self.language_names for w in words):
            return {}
        if self._language_files is None or self._language_files[0] != count:
            self._language_files = (count, self.store.language_files())
        return language.named(words, self.language_names, self._language_files[1])

    @staticmethod
    def _mass(words: Sequence[str], dfs: dict[str, int], count: int) -> dict[str, float]:
        """The IDF of each word of the question (and of the caller's extra terms the index
        knows: an expansion that misses says nothing against the question); a word the index
        has never seen weighs like the rarest word (one node)."""
        return {word: idf(max(dfs.get(word, 0), 1), count) for word in words}

    def _affordable(self, terms: Sequence[str], dfs: dict[str, int], tf: dict[str, int],
                    budget: int, cap: int, full: int) -> list[str]:
        """Rarest first, the terms whose postings (times their repeats in the match, which
        cost again) fit `budget`; a term held by `full` nodes or more tells nothing apart and
        is never kept, even alone. A count stopped at `cap` (< `full`) is taken further when
        the walk reaches it (and recorded in `dfs`)."""
        postings = 0
        kept: list[str] = []
        for term in sorted(terms, key=lambda t: dfs[t]):
            if dfs[term] >= cap < full:
                dfs[term] = self.store.doc_freqs([term], full)[term]
            postings += dfs[term] * min(tf.get(term, 1), self.config.query_tf)
            if postings > budget and (kept or dfs[term] >= full):
                break
            kept.append(term)
        return kept

    def coverage(self, q: QueryTerms, node_ids: Sequence[str]) -> float:
        """The largest share of the question's IDF mass one of `node_ids` holds (1 for a
        question too long to judge this way)."""
        total = sum(q.mass.values())
        if not total:
            return 1.0
        best = 0.0
        for held in self.store.held_terms(node_ids, q.mass).values():
            best = max(best, sum(w for t, w in q.mass.items() if t in held) / total)
        return best

    # --- candidate lists --------------------------------------------------------------------

    def filters(self, request: Request) -> Filters:
        return Filters(tuple(request.kinds), tuple(request.types), statuses_for(request),
                       tuple(request.paths), request.as_of)

    def _match(self, q: QueryTerms) -> TextQuery:
        """The text query of the kept terms; a term the question repeats counts (up to
        `query_tf` times) as that many terms, as BM25 counts a repeated query term."""
        if q.conjunctive:
            return TextQuery(q.terms, (1,) * len(q.terms), True)
        # Trigger: a question, not a pasted issue. Why: each of a question's few words was
        # chosen, and in a small project most are in half the nodes, where FTS5's IDF counts
        # them as nothing; an issue's sixty-odd terms are weighed by their parts and counts
        # already, and its common words counting too cost SWE-bench dev instances (Acc@5
        # -1.6 paired). Outcome: Lucene's IDF for a question, FTS5's for an issue.
        common = self.config.common_idf and not q.issue
        return TextQuery(q.terms, tuple(max(1, min(q.tf.get(t, 1), self.config.query_tf))
                                        for t in q.terms), common=common)

    def _bm25(self, q: QueryTerms, filters: Filters) -> list[tuple[str, float]]:
        if not q.terms or self.config.bm25 <= 0:
            return []
        return self.store.text_search(self._match(q), self.config.pool, filters,
                                      self.config.weights)

    def _title(self, q: QueryTerms, filters: Filters) -> list[str]:
        """An issue's title searched alone: it names the topic in the project's own words,
        which the rest of the text (an example, a log) drowns."""
        if not q.title or self.config.title <= 0:
            return []
        query = TextQuery(q.title, (1,) * len(q.title))
        return [i for i, _ in self.store.text_search(query, self.config.pool, filters,
                                                     self.config.weights)]

    def _notes(self, q: QueryTerms, filters: Filters, bm25: list[tuple[str, float]],
               rows: dict[str, NodeRow]) -> list[str]:
        """The bm25 ranking of the notes holding most of the question's terms, when code
        competes with them: such a note is short and written for this, and a long file holding
        the same words would push it down."""
        if (self.config.notes <= 0 or (filters.kinds and "note" not in filters.kinds)
                or all(row.kind == "note" for row in rows.values())):
            return []
        pooled = [i for i, _ in bm25 if i in rows and rows[i].kind == "note"]
        if len(pooled) >= _POOLED_NOTES or len(bm25) < self.config.pool:
            found = pooled  # the pool already holds the best notes, in their order
        else:
            hits = self.store.text_search(self._match(q), self.config.pool,
                                          filters._replace(kinds=("note",)),
                                          self.config.weights)
            records = self.store.nodes([i for i, _ in hits if i not in rows])
            found = [i for i, _ in track.rescore(hits, {**rows, **records},
                                                 self.config.track)[0]]
        # The second vote is for notes about the question: holding most of its terms (three
        # of a long one's). A note sharing one word of four with it keeps its bm25 place only.
        need = min(len(q.terms) // 2 + 1, _NOTE_TERMS)
        if need <= 1 or not found:
            return found
        held = self.store.held_terms(found, q.terms)
        return [i for i in found if len(held.get(i, ())) >= need]

    def _sections(self, q: QueryTerms, request: Request) -> list[tuple[str, int]]:
        """Code files by their best-matching section, with that section's first line."""
        if not q.terms or self.config.sections <= 0 or (request.kinds and
                                                         "file" not in request.kinds):
            return []
        if q.conjunctive:
            return self._best_sections(q)
        # A term is in more sections than files: the section search gets half the budget.
        full = self.config.max_postings + 1  # the kept terms' counts are exact below this
        chosen = set(self._affordable(q.terms, q.dfs, q.tf, self.config.max_postings // 2,
                                      full, full))
        return self._best_sections(q._replace(terms=tuple(t for t in q.terms if t in chosen)))

    def _best_sections(self, q: QueryTerms) -> list[tuple[str, int]]:
        best: dict[str, int] = {}
        for path, line, _ in self.store.section_search(self._match(q), self.config.pool * 4):
            best.setdefault(path, line)
            if len(best) >= self.config.pool:
                break
        return list(best.items())

    def _entities(self, text: str, bm25_nodes: Sequence[NodeRow], frames: Sequence[str] = (),
                  functions: Sequence[str] = ()
                  ) -> tuple[list[entities.EntityHit], dict[str, list[SymbolRow]]]:
        if self.config.entities <= 0:
            return [], {}
        store = self.store
        # A file of the traceback is ranked by its depth there, not by how often it is named
        # (a recursion names one file ten times).
        traced = entities.frames(store, frames)
        deep = {h.id for h in traced}
        found = [*(h for h in entities.paths(store, text) if h.id not in deep), *traced,
                 *entities.note_ids(store, text),
                 *entities.titles(bm25_nodes, text, self.analyzer.terms)]
        symbol_hits = entities.symbols(store, text, self.config.max_definers, functions)
        matched: dict[str, list[SymbolRow]] = {}
        for hit in symbol_hits:
            if hit.symbol is not None:
                matched.setdefault(hit.id, []).append(hit.symbol)
        # A traceback's functions point at the files defining them; in a file of the traceback
        # they would only count its frames again.
        named = set(entities.identifiers(text))
        symbol_hits = [h for h in symbol_hits if h.id not in deep
                       or (h.symbol is not None and h.symbol.name in named)]
        return entities.merge([*found, *symbol_hits]), matched

    def _ppr(self, seeds: dict[str, float]) -> tuple[list[str], dict[str, ppr.Via]]:
        if not seeds or self.config.ppr <= 0:
            return [], {}
        code = self.config.code_edges
        origins = {o: w * (code if o in ("import", "reference", "cochange") else 1.0)
                   for o, w in ppr.ORIGIN_WEIGHTS.items()}
        # A node holding less residual than a fraction of `ppr_floor` cannot lift a neighbour
        # over it: pushing it would be work for nothing.
        scores, via, degrees = ppr.push(self.store, seeds, self.config.alpha, self.config.pushes,
                                        self.config.ppr_floor / 40, origins,
                                        self.store.edge_batch)
        # A node the walk barely reached is no evidence: keep those holding a share of the
        # seeds' mass (the seeds themselves always stay).
        reached = {n: s for n, s in scores.items()
                   if n in seeds or (n in via and s >= self.config.ppr_floor)}
        top = sorted(reached.items(), key=lambda p: -p[1])[: self.config.pool * 2]

        def degree(node: str) -> int:
            return degrees[node] if node in degrees else self.store.degree(node)

        damped = ppr.discounted(dict(top), degree)
        order = sorted(damped, key=lambda n: (-damped[n], n))
        return order[: self.config.pool], via

    # --- ranking ----------------------------------------------------------------------------

    def candidates(self, request: Request) -> Candidates:
        """Run the lists and fuse them."""
        q = self.analyse(request)
        filters = self.filters(request)
        text = question_text(request, q.named)
        # The question's vector is computed while the text lists run (embed.Early).
        early = (Early(self.embedder, text) if self.embedder is not None
                 and max(self.config.vectors, self.config.code_vectors, self.config.code_alone) > 0
                 and (self.config.issue_vectors > 0 or not q.issue)
                 else None)
        bm25 = self._bm25(q, filters)
        rows = self.store.nodes([i for i, _ in bm25[: self.config.pool]])
        # A procedure's track record weighs its relevance (track.py) before any list ranks.
        bm25, recorded = track.rescore(bm25, rows, self.config.track)
        notes = self._notes(q, filters, bm25, rows)
        found, symbols = self._entities(text, list(rows.values()),
                                        issue.frames(request.query),
                                        issue.functions(request.query))
        allowed = self.store.nodes([h.id for h in found], filters)
        rows.update(allowed)
        hits = [h for h in found if h.id in allowed]
        why: dict[str, list[str]] = {}
        for hit in hits:
            why.setdefault(hit.id, []).append(hit.why)
        for node_id in recorded:
            why.setdefault(node_id, []).append(track.reason(rows[node_id]))
        seeds: dict[str, float] = {}
        # Trigger: a pasted issue. Why: the best text matches of an issue are those of its
        # example and its log, and a walk from them only echoes bm25's top. Outcome: the walk
        # starts from what the issue names (files, frames, symbols), or does not run.
        for rank, (node_id, _) in enumerate(bm25[: 0 if q.issue else self.config.seeds],
                                            start=1):
            seeds[node_id] = seeds.get(node_id, 0.0) + 1.0 / rank
        for rank, hit in enumerate(hits[: self.config.seeds], start=1):
            seeds[hit.id] = seeds.get(hit.id, 0.0) + 1.0 / rank
        sections = self._sections(q, request)
        walk, via = self._ppr(seeds)
        near: dict[str, float] = {}
        if early is not None:
            near = dict(nearest(self.store, early.embedder, text, self.config.pool * 2, early))
        vectors = list(near)
        section_ids = [path for path, _ in sections]
        # Every row so far passed the filters (bm25 ranks and entities are read with them).
        heading = self._title(q, filters)  # read with the filters, like bm25
        others = [i for i in [*walk, *vectors, *section_ids, *heading] if i not in rows]
        rows.update(self.store.nodes(others, filters))
        passes = rows.keys()
        walk = [i for i in walk if i in passes]
        vectors = [i for i in vectors if i in passes][: self.config.pool]
        section_ids = self._section_view([i for i, _ in bm25], rows,
                                         [i for i in section_ids if i in passes])
        lines = dict(sections)
        # Code and notes rank in two vector lists: a question in prose shares few words with
        # code (identifiers, not sentences), so the vectors carry more of the answer there than
        # among notes written in the question's own words (`code_vectors` weighs that).
        lists = {"bm25": [i for i, _ in bm25], "entities": [h.id for h in hits], "title": heading,
                 "ppr": walk, "vectors": [i for i in vectors if rows[i].kind == "note"],
                 "code_vectors": [i for i in vectors if rows[i].kind != "note"],
                 "sections": section_ids, "notes": notes}
        # A question naming one or two things means them; a pasted issue naming twenty
        # (a traceback, a config listing every extension) names mostly context. The entity
        # list weighs in full up to `focus` entities and is spread over more beyond.
        focus = self.config.entity_focus
        # A pasted issue's meaning is mostly in the names it holds, and its vector (its text
        # without noise, cut at the encoder's window) meets a file by one of its sections: the
        # vector lists weigh half (`issue_vectors`; SWE-bench dev Acc@3 +8.0 [+2.4, +14.4],
        # Acc@5 +5.6 [+0.0, +12.0] with the local model, docs/embeddings.md).
        meaning = self.config.issue_vectors if q.issue else 1.0
        # Among code alone (a search for files, a project whose notes say nothing of this) no
        # note can be crowded out, and there the vectors rank code better than the text lists
        # do: the code vector list weighs as much as those lists together (`code_alone`).
        code = (self.config.code_vectors if any(r.kind == "note" for r in rows.values())
                else self.config.code_alone)
        weights = {"bm25": self.config.bm25,
                   "entities": self.config.entities * min(1.0, focus / max(1, len(hits))),
                   "ppr": self.config.ppr, "vectors": self.config.vectors * meaning,
                   "code_vectors": code * meaning,
                   "sections": self.config.sections, "notes": self.config.notes,
                   "title": self.config.title}
        fused = self._aside(rrf(lists, weights, self.config.rrf_k), rows, q)
        if early is not None and near:
            lines.update(self._vector_lines(early, fused, rows, near, lines))
        bm25_ids = set(lists["bm25"])
        for node_id, _ in fused:
            reasons = why.setdefault(node_id, [])
            step = via.get(node_id)
            if step is not None and step.node in rows and step.node != node_id:
                reasons.append(self._via_text(step, rows[step.node]))
            if node_id in vectors and not reasons and node_id not in bm25_ids:
                reasons.append("close in meaning to the question")
            if node_id in lines and lines[node_id] > 1:
                reasons.append(f"best match near line {lines[node_id]}")
        if self.config.mmr > 0:
            fused = mmr(fused, self._similarity(rows), self.config.mmr, self.config.pool)
        return Candidates(fused, rows, why, q, {h.id for h in hits}, symbols,
                          {*lists["bm25"], *lists["sections"], *lists["notes"]},
                          max((near[i] for i in vectors), default=0.0),
                          {name: ids for name, ids in lists.items() if ids})

    def _vector_lines(self, early: Early, fused: list[tuple[str, float]],
                      rows: dict[str, NodeRow], near: dict[str, float], lines: dict[str, int]
                      ) -> dict[str, int]:
        """Where the question's vector met each file it ranks that no section of text placed
        (a long file is embedded by section: `search/embed.py`), among the best `_LINED` (each
        is a file read)."""
        if self.source is None:
            return {}
        files = {node_id: rows[node_id].path or node_id for node_id, _ in fused[:_LINED]
                 if node_id in near and rows[node_id].kind == "file"
                 and lines.get(node_id, 0) <= 1}
        if not files:
            return {}
        return matched_lines(self.store, early.embedder.name, early.vector(), files,
                             self.source)

    def _aside(self, fused: list[tuple[str, float]], rows: dict[str, NodeRow], q: QueryTerms
               ) -> list[tuple[str, float]]:
        if self.config.aside >= 1:
            return fused
        spoken = {kind for kind, words in self.aside_words.items() if not words.isdisjoint(q.tf)}
        files = {i for i, row in rows.items() if row.kind == "file"}
        return aside.reweigh(fused, files, self.config.aside, spoken)

    @staticmethod
    def _section_view(bm25: list[str], rows: dict[str, NodeRow], files: list[str]
                      ) -> list[str]:
        """The bm25 list with its code files in the order of their best section (and files
        only sections found after them). A note is its own section: it keeps its place, so
        this second view of the text does not favour code over notes."""
        if not files:
            return []
        queue = iter(files)
        out: list[str] = []
        for node_id in bm25:
            row = rows.get(node_id)
            if row is not None and row.kind == "file":
                nxt = next(queue, None)
                if nxt is not None:
                    out.append(nxt)
            else:
                out.append(node_id)
        out += list(queue)
        return list(dict.fromkeys(out))

    def _via_text(self, step: ppr.Via, other: NodeRow) -> str:
        name = f'"{other.title}"' if other.kind == "note" else other.id
        if step.origin == "import":
            return f"imports {name}" if step.outgoing else f"imported by {name}"
        if step.origin == "reference":
            return f"uses names from {name}" if step.outgoing else f"its names are used by {name}"
        if step.origin == "cochange":
            return f"changes together with {name}"
        if step.outgoing:
            return f"about {name}" if other.kind != "note" else f"links to {name}"
        return f"linked to {name}"

    def _similarity(self, rows: dict[str, NodeRow]) -> Callable[[str, str], float]:
        cache: dict[str, set[str]] = {}

        def terms(node_id: str) -> set[str]:
            if node_id not in cache:
                row = rows.get(node_id)
                cache[node_id] = set(self.analyzer.terms(
                    f"{row.title} {row.body[:2000]}")) if row else set()
            return cache[node_id]

        def similarity(a: str, b: str) -> float:
            ta, tb = terms(a), terms(b)
            return len(ta & tb) / len(ta | tb) if ta and tb else 0.0

        return similarity

    def rank(self, request: Request, render_items: bool = True) -> list[Item]:
        """Every candidate, best first, up to `request.limit`, explained but not packed and
        without abstention (what evaluation scores)."""
        c = self.candidates(request)
        ranked = [(i, s) for i, s in c.fused[: request.limit] if i in c.rows]
        held = (self.store.held_terms([i for i, _ in ranked], c.query.terms)
                if render_items and c.query.terms else {})
        defs = (self.store.symbols_in([i for i, _ in ranked if c.rows[i].kind == "file"])
                if render_items else {})
        return [self._item(node_id, score, c.rows[node_id], c.why.get(node_id, []), c.query,
                           c.symbols, held.get(node_id, set()), defs.get(node_id, []),
                           render_items)._replace(lists=c.placed(node_id))
                for node_id, score in ranked]

    def _item(self, node_id: str, score: float, row: NodeRow, reasons: list[str],
              q: QueryTerms, symbols: dict[str, list[SymbolRow]], held: set[str],
              defs: list[tuple[str, str, int]], full: bool) -> Item:
        """One candidate as shown; `held`: which of the query's terms its text holds; `defs`:
        a file's definitions (`symbols_in`)."""
        reasons = list(dict.fromkeys(reasons))
        if full and q.terms:
            matched = sorted(held, key=lambda t: (q.dfs.get(t, 0), t))
            if matched:
                reasons.insert(0, "matches " + ", ".join(matched[:4]))
        details: tuple[str, ...] = ()
        if row.kind == "note":
            details = row.files
            text = snippet(row.body)
            title = row.title
        elif row.kind == "file":
            details = definitions(defs, {s.name for s in symbols.get(node_id, ())},
                                  {t: q.dfs.get(t, 0) for t in q.terms}, self.analyzer.terms)
            module = node_id.rsplit("/", 1)[0] if "/" in node_id else "."
            title = f"{node_id} — module {module}/"
            text = file_snippet(row.body)
        else:
            title = row.id
            text = snippet(row.body, 200)
        item = Item(node_id, row.kind, row.type, title, row.path, row.status, row.scope, score,
                    tuple(reasons), text, details, superseded_by=row.superseded_by)
        return render(item) if full else item

    # --- recall -----------------------------------------------------------------------------

    def abstention(self, request: Request) -> Signal:
        """What `recall` decides to abstain on for `request` (`loremap calibrate` fits the
        `coverage` threshold to a project's questions with it)."""
        return self._signal(self.candidates(request))

    def _signal(self, c: Candidates, measure: bool = True) -> Signal:
        """The abstention signal of `c`; without `measure` the coverage is not computed (a
        recall that never abstains on it reads the index no further)."""
        q = c.query
        if q.chatter:
            return Signal(0.0, "a conversational reply, not a question")
        if not c.fused:
            return Signal(0.0, "no indexed item matches the question" if not q.dropped else
                          "the question's words are in too many places to tell anything "
                          "apart; name a file, a symbol or a note")
        if not measure or c.named or c.closest >= self.config.meaning:
            return Signal(1.0)  # an entity named, or a vector close enough: never abstains
        text_hits = ([i for i, _ in c.fused if i in c.text]
                     or [i for i, _ in c.fused])[:_JUDGED]
        return Signal(self.coverage(q, text_hits))

    def recall(self, request: Request) -> Recall:
        """The packed answer, or an abstention that says why there is none."""
        started = time.perf_counter()
        c = self.candidates(request)
        q = c.query

        def done(items: Packed | None, reason: str) -> Recall:
            return Recall(items.items if items else [], items.tokens if items else 0,
                          items.left_out if items else 0, items is None, reason, q.terms,
                          time.perf_counter() - started)

        signal = self._signal(c, self.config.abstain)
        if signal.always:
            return done(None, signal.always)
        if self.config.abstain and signal.coverage < self.config.coverage:
            return done(None, "no item holds enough of what the question asks")
        ranked = [(i, s) for i, s in c.fused[: request.limit * 3] if i in c.rows]

        def items() -> Iterator[Item]:
            held: dict[str, set[str]] = {}
            defs: dict[str, list[tuple[str, str, int]]] = {}
            for n, (node_id, score) in enumerate(ranked):
                row = c.rows[node_id]
                # Read for the next `limit` items at once; packing stops at the budget.
                if q.terms and node_id not in held:
                    held.update(self.store.held_terms(
                        [i for i, _ in ranked[n:n + request.limit]], q.terms))
                if row.kind == "file" and node_id not in defs:
                    defs.update(self.store.symbols_in(
                        [i for i, _ in ranked[n:n + request.limit]
                         if c.rows[i].kind == "file"]))
                item = self._item(node_id, score, row, c.why.get(node_id, []), q, c.symbols,
                                  held.get(node_id, set()), defs.get(node_id, []), True
                                  )._replace(lists=c.placed(node_id))
                if self.stale is not None and row.kind == "note" and row.file_hashes:
                    warnings = self.stale(row)
                    if warnings:
                        item = render(item._replace(stale=tuple(warnings)))
                yield item

        return done(pack(items(), request.budget, request.limit), "")
