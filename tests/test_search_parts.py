"""The search engine's parts on their own: the walk, the fusion, entities, sections, counts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loremap.codemap.index import sections
from loremap.model import Note, NoteType
from loremap.model.code import CHUNK_LINES, Definition
from loremap.model.search import Filters, Neighbor, TextQuery
from loremap.search import entities, ppr
from loremap.search.config import DEFAULT_WEIGHTS
from loremap.search.engine import Engine, Request
from loremap.search.fuse import mmr, rrf
from loremap.store.sqlite import SqliteStore
from loremap.store.sqlite.search import fts_match
from loremap.text import Analyzer

WORDS = ("apple", "pear", "plum", "fig", "kiwi", "lime", "date")


class Graph:
    """A graph over undirected (a, b, weight, origin) edges, recording the nodes whose edges
    were read and the statements a store would run."""

    def __init__(self, edges):
        self.calls, self.reads = [], 0
        self.table: dict[str, list[Neighbor]] = {}
        for a, b, weight, origin in edges:
            self.table.setdefault(a, []).append(Neighbor(b, "rel", origin, weight, True))
            self.table.setdefault(b, []).append(Neighbor(a, "rel", origin, weight, False))

    def neighborhoods(self, nodes, cap):
        self.reads += 1
        out = {}
        for node in nodes:
            edges = self.table.get(node, [])
            out[node] = None if len(edges) > cap else edges
            if out[node] is not None:
                self.calls.append(node)
        return out

    def neighbors(self, node, limit=256):
        self.reads += 1
        self.calls.append(node)
        return self.table.get(node, [])[:limit]

    def degree_over(self, node, limit):
        self.reads += 1
        return len(self.table.get(node, [])) > limit


def test_the_walk_ranks_near_nodes_first_and_explains_how_they_were_reached():
    g = Graph([("seed", "near", 1.0, "import"), ("near", "far", 1.0, "import"),
               ("seed", "note", 1.0, "declared")])
    score, via, _ = ppr.push(g, {"seed": 1.0}, alpha=0.3, max_pushes=50, epsilon=1e-6)
    assert score["seed"] > score["near"] > score["far"]
    assert score["note"] > score["near"]  # a declared link carries twice an import
    assert via["far"].node == "near" and via["note"].origin == "declared"
    assert 0.99 < sum(score.values()) <= 1.0  # residuals too small to push settle a share


def test_the_walk_gives_a_note_linking_to_a_seed_more_than_the_note_the_seed_links_to():
    # "older" <- "seed" <- "newer": the seed links back to what it followed, and "newer"
    # (written after the seed, linking to it) holds what came of it.
    g = Graph([("seed", "older", 1.0, "declared"), ("newer", "seed", 1.0, "declared")])
    score, via, _ = ppr.push(g, {"seed": 1.0}, alpha=0.3, max_pushes=50, epsilon=1e-6)
    assert score["newer"] > 2 * score["older"] > 0
    assert via["newer"].origin == via["older"].origin == "declared"
    assert ppr.edge_weight(Neighbor("newer", "rel", "declared", 1.0, False)) == \
        4 * ppr.edge_weight(Neighbor("older", "rel", "declared", 1.0, True))


def test_the_walk_does_the_same_work_on_a_small_and_a_huge_graph():
    rng = random.Random(7)

    def random_edges(nodes):
        edges = [(f"n{i}", f"n{rng.randrange(nodes)}", 1.0, "reference") for i in range(nodes)
                 for _ in range(4)]
        return [*edges, ("seed", "n0", 1.0, "import"), ("seed", "n1", 1.0, "import")]

    for size in (100, 100_000):
        edges = random_edges(size)
        walks, reads = [], []
        for batch in (1, 8):
            g = Graph(edges)
            walks.append(ppr.push(g, {"seed": 1.0}, max_pushes=20, epsilon=5e-4, batch=batch))
            reads.append(g.reads)
            # Whatever the graph's size: the edges of at most 20 pushes and 40 degree checks,
            # read `batch` nodes at a time (the nodes the walk may need next come along).
            assert len(g.calls) <= 40 + 20 * batch and g.reads <= 40
        # Reading ahead changes the number of reads, never the walk.
        assert walks[0][:2] == walks[1][:2] and reads[1] < reads[0]


def test_a_hub_is_not_walked_through_unless_much_mass_reaches_it():
    edges = [("seed", "hub", 1.0, "import"), ("seed", "leaf", 1.0, "import")]
    edges += [("hub", f"x{i}", 1.0, "import") for i in range(2000)]
    g = Graph(edges)
    score, _, _ = ppr.push(g, {"seed": 1.0}, max_pushes=20, epsilon=5e-4)
    assert "hub" not in g.calls and not any(node.startswith("x") for node in score)
    damped = ppr.discounted({"hub": 0.1, "leaf": 0.1}, {"hub": 2001, "leaf": 1}.__getitem__)
    assert damped["leaf"] > damped["hub"]


def test_reciprocal_rank_fusion():
    fused = rrf({"a": ["x", "y", "z"], "b": ["y", "w"]}, {"a": 1.0, "b": 1.0}, k=60)
    assert [node for node, _ in fused] == ["y", "x", "w", "z"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    off = rrf({"a": ["x"], "b": ["y"]}, {"a": 1.0, "b": 0.0})
    assert [node for node, _ in off] == ["x"]


def test_mmr_moves_a_near_duplicate_down():
    ranked = [("a", 1.0), ("a2", 0.99), ("b", 0.9)]
    same = {frozenset({"a", "a2"}): 1.0}
    reordered = mmr(ranked, lambda x, y: same.get(frozenset({x, y}), 0.0), 0.5, 3)
    assert [node for node, _ in reordered] == ["a", "b", "a2"]
    assert mmr(ranked, lambda x, y: 1.0, 0.0, 3) == ranked


@pytest.mark.parametrize(("text", "names"), [
    ("why does apply_coupon run twice", ["apply_coupon"]),
    ("calling formatPrice( with a negative", ["formatPrice"]),
    ("so.Plot([1, 2]).add(so.Line(), so.PolyFit())", ["Plot", "Line", "PolyFit"]),
    ("`Config` is read twice", ["Config"]),
    ("The cart and the index get run", []),
    ("requests.get(url) fails", []),
    ("HTTPServerError when parsing", ["HTTPServerError"]),
    ("the Request has a .register_hook() method", ["register_hook"]),
    ("then call .send()", []),
])
def test_only_names_that_can_only_be_code_are_entities(text, names):
    assert entities.identifiers(text) == names


def test_paths_file_names_and_dotted_modules_in_a_question():
    class Names:
        def files_named(self, names):
            known = {"plot.py": ["seaborn/_core/plot.py"], "__init__.py":
                     ["sphinx/ext/autodoc/__init__.py", "sphinx/__init__.py"],
                     "cart.py": ["src/shop/cart.py"]}
            return {n: known[n] for n in names if n in known}

        def symbols_named(self, names, max_definers):
            return []

        def existing_ids(self, ids):
            return {i for i in ids if i in {"sphinx/ext/autodoc/", "gotcha-x-y"}}

    found = {h.id for h in entities.paths(Names(), 'File "~/code/seaborn/seaborn/_core/plot.py"'
                                                  ", line 265")}
    assert found == {"seaborn/_core/plot.py"}
    found = {h.id for h in entities.paths(Names(), "extensions = ['sphinx.ext.autodoc']")}
    assert found == {"sphinx/ext/autodoc/__init__.py", "sphinx/ext/autodoc/"}
    assert {h.id for h in entities.paths(Names(), "see cart.py")} == {"src/shop/cart.py"}
    assert [h.id for h in entities.note_ids(Names(), "as gotcha-x-y says")] == ["gotcha-x-y"]


def test_sections_cut_a_file_at_its_definitions():
    source = "\n".join(f"line {n}" for n in range(1, 61))
    defs = [Definition("a", "function", 1), Definition("b", "function", 5),
            Definition("c", "function", 20), Definition("d", "function", 55)]
    cut = sections("src/x.py", source, defs, Analyzer())
    assert [line for line, _ in cut] == [1, 20]  # 5 is too close to 1; 55 leaves a short tail
    assert all(text.startswith("src x_py py line 1") for _, text in cut[:1])
    assert cut[1][1].startswith("src x_py py line 20 ")
    assert CHUNK_LINES == 12


@pytest.fixture
def store(tmp_path):
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    notes = [Note(id=f"bug-n{i}", type=NoteType.BUG, title=f"Ledger row {i}",
                  body="ledger " + ("rare " if i == 3 else "")) for i in range(30)]
    with store.write():
        for note in notes:
            store.upsert_note(note, "project", f"notes/{note.id}.md", note.id, 1, 1)
    yield store
    store.close()


def test_the_node_counter_follows_inserts_and_deletes(store):
    assert store.node_count() == 30
    with store.write():
        store.delete_note("bug-n0")
    assert store.node_count() == 29 == store.conn.execute(
        "SELECT count(*) FROM nodes").fetchone()[0]


def test_document_counts_stop_at_the_cap(store):
    assert store.doc_freqs(["ledger", "rare", "absent"], cap=10) == {
        "ledger": 10, "rare": 1, "absent": 0}


def test_the_postings_budget_keeps_the_rarest_terms(store):
    engine = Engine(store, Analyzer(), None)
    engine.config = engine.config._replace(max_postings=5)
    q = engine.analyse(Request("ledger rare"))
    assert q.terms == ("rare",) and q.dropped == 1


def test_sections_follow_the_files_through_edits_and_deletions(tmp_path):
    from loremap.codemap.discover import SkipRules
    from loremap.codemap.index import index_code

    root = tmp_path / "code"
    root.mkdir()
    body = "\n".join(f"    x{n} = {n}" for n in range(20))
    (root / "a.py").write_text(f"def one():\n{body}\n\ndef two():\n{body}\n", encoding="utf-8")
    (root / "b.py").write_text("def three():\n    return 3\n", encoding="utf-8")
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer())

    def state():
        c = store.conn
        rows = c.execute("SELECT file, line FROM sections ORDER BY file, line").fetchall()
        assert c.execute("SELECT count(*) FROM chunks").fetchone()[0] == len(rows)
        assert store.node_count() == c.execute("SELECT count(*) FROM nodes").fetchone()[0]
        return rows

    index_code(store, root, SkipRules(), None, history_commits=0)
    assert state() == [("a.py", 1), ("a.py", 23), ("b.py", 1)]
    assert [p for p, _, _ in store.section_search(TextQuery(("three",), (1,)), 5)] == ["b.py"]
    (root / "a.py").write_text("def only():\n    return 1\n", encoding="utf-8")
    (root / "b.py").unlink()
    index_code(store, root, SkipRules(), None, history_commits=0)
    assert state() == [("a.py", 1)]
    assert store.section_search(TextQuery(("three",), (1,)), 5) == []
    store.close()


def test_an_edited_file_keeps_its_commit_subjects_until_history_is_read_again(tmp_path):
    from loremap.codemap.discover import SkipRules
    from loremap.codemap.index import index_code

    root = tmp_path / "code"
    root.mkdir()
    (root / "a.py").write_text('"""Alpha."""\n', encoding="utf-8")
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    index_code(store, root, SkipRules(), None, history_commits=0)
    with store.write():
        store.set_subjects({"a.py": ("Fix the alpha rounding",)})
    (root / "a.py").write_text('"""Alpha, edited."""\n', encoding="utf-8")
    index_code(store, root, SkipRules(), None, history_commits=0)
    body = store.nodes(["a.py"])["a.py"].body
    assert body == "Alpha, edited.\n\nFix the alpha rounding"
    found = store.text_search(TextQuery(("round",), (1,)), 5, Filters(), DEFAULT_WEIGHTS)
    assert [p for p, _ in found] == ["a.py"]
    store.close()


def test_a_question_made_only_of_words_in_too_many_nodes_is_not_text_searched(store):
    engine = Engine(store, Analyzer(), None)
    engine.config = engine.config._replace(max_postings=5)
    assert engine.analyse(Request("ledger")).terms == ()
    found = engine.recall(Request("ledger"))
    assert found.abstained and "too many places" in found.reason


def test_a_question_of_common_words_searches_the_nodes_holding_them_all(store):
    engine = Engine(store, Analyzer(), None)
    engine.config = engine.config._replace(max_postings=5)
    q = engine.analyse(Request("ledger row"))
    assert q.conjunctive and set(q.terms) == {"ledger", "row"}
    query = engine._match(q)
    assert query.all_of and set(query.terms) == {"ledger", "row"}
    assert fts_match(query) in ('"ledger" AND "row"', '"row" AND "ledger"')
    assert engine.rank(Request("ledger row"), render_items=False)


def single_terms(conn, table, weights=""):
    """`ranked`'s postings read straight from FTS5: a term's rows and its bm25() alone."""
    def postings(match):
        found = conn.execute(f"SELECT rowid, bm25({table}{weights}) FROM {table} "
                             f"WHERE {table} MATCH ?", (match,)).fetchall()
        return [r for r, _ in found], [s for _, s in found]
    return postings


def test_a_word_in_most_rows_still_counts_with_lucenes_idf():
    import math
    import sqlite3

    from loremap.store.sqlite.search import ranked as search

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    rows = ["apple apple pear", "apple plum", "apple", "kiwi fig", "fig fig fig plum"]
    conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", enumerate(rows, start=1))

    def ranked(query: TextQuery) -> list[tuple[int, float]]:
        return [(r, -s) for r, s in search(query, len(rows), single_terms(conn, "t"))]

    def lucene(row: int, terms: dict[str, int]) -> float:
        """BM25 as FTS5 computes it (k1 1.2, b 0.75), with ln(1 + ...) for the IDF."""
        lengths = [len(r.split()) for r in rows]
        words = rows[row - 1].split()
        score = 0.0
        for term, repeats in terms.items():
            hits = sum(term in r.split() for r in rows)
            idf = math.log1p((len(rows) - hits + 0.5) / (hits + 0.5))
            tf = words.count(term)
            norm = 1.2 * (0.25 + 0.75 * len(words) / (sum(lengths) / len(rows)))
            score += repeats * idf * tf * 2.2 / (tf + norm)
        return score

    # "apple" is in 3 rows of 5: FTS5 floors its IDF, so a row holding only "plum" outranks
    # one holding "apple" twice and "plum" not at all, and "apple" alone scores ~0.
    floored = ranked(TextQuery(("apple", "plum"), (1, 1)))
    assert floored[0][0] in (2, 5) and dict(floored)[3] < 1e-5
    common = ranked(TextQuery(("apple", "plum"), (1, 2), common=True))
    assert [r for r, _ in common] == sorted(
        (1, 2, 3, 5), key=lambda r: (-lucene(r, {"apple": 1, "plum": 2}), r))
    for row, score in common:
        assert score == pytest.approx(lucene(row, {"apple": 1, "plum": 2}), rel=1e-9)
    # A term no row holds adds nothing.
    assert ranked(TextQuery(("durian",), (1,), common=True)) == []


@settings(max_examples=60)
@given(st.lists(st.tuples(st.lists(st.sampled_from(WORDS), max_size=6),
                          st.lists(st.sampled_from(WORDS), max_size=12)), min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from(WORDS), st.integers(1, 3)), min_size=1, max_size=5),
       st.sampled_from([(), (0,), (1,), (0, 1)]))
def test_terms_scored_one_at_a_time_sum_to_fts5s_own_or_query(rows, terms, columns):
    """The SQLite store reads each term's bm25() alone and sums them (`ranked`): the same
    rows, order and scores as FTS5 ranking the whole OR query, repeats and columns included."""
    import sqlite3

    from loremap.store.sqlite.search import ranked

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, body)")
    conn.executemany("INSERT INTO t (rowid, title, body) VALUES (?, ?, ?)",
                     [(i, " ".join(a), " ".join(b)) for i, (a, b) in enumerate(rows, start=1)])
    query = TextQuery(tuple(t for t, _ in terms), tuple(n for _, n in terms), columns=columns)
    weights = ", 5.0, 1.0"
    fts5 = conn.execute(f"SELECT rowid, bm25(t{weights}) AS score FROM t WHERE t MATCH ? "
                        "ORDER BY score, rowid", (fts_match(query),)).fetchall()
    ours = ranked(query, len(rows), single_terms(conn, "t", weights))
    assert sorted(r for r, _ in ours) == sorted(r for r, _ in fts5)
    assert dict(ours) == pytest.approx(dict(fts5), rel=1e-12, abs=1e-15)
    # In FTS5's order, up to equal scores that round apart in the last bit.
    assert [dict(fts5)[r] for r, _ in ours] == pytest.approx([s for _, s in fts5], rel=1e-12,
                                                             abs=1e-15)
