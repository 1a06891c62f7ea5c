"""The code map on PostgreSQL: the real indexer over a real repository gives the same map on
both stores (files, edges and their weights, ranks, symbols, modules, notes, search), through
edits, deletions and new commits; one project never sees another's code; a project's first
index beside an ANALYZEd one deletes nothing per file and plans no nested loop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import git, new_repo
from loremap.codemap.discover import SkipRules
from loremap.codemap.index import index_code
from loremap.git import head_commit
from loremap.model import Link, Note, NoteType, Relation
from loremap.model.code import CodeFile, Definition
from loremap.model.search import Filters, TextQuery
from loremap.search.config import DEFAULT_WEIGHTS
from loremap.store.sqlite import SqliteStore
from loremap.text import Analyzer


@pytest.fixture
def open_pg(pg_url):
    """PostgresStore(project) on the test's fresh database (conftest's `pg_url`), migrated;
    closed at the end."""
    import psycopg

    from loremap.store.postgres import schema
    from loremap.store.postgres.store import PostgresStore

    with psycopg.connect(pg_url) as conn, conn.transaction():
        schema.migrate(conn)
    stores = []

    def make(project: str = "proj-a"):
        store = PostgresStore(pg_url, project, Analyzer(["en"]))
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


# --- the repository --------------------------------------------------------------------------

_LONG = "\n".join(f"    step_{n} = value * {n}  # pricing step {n}" for n in range(14))
FILES = {
    "README.md": "# Shop\n\nA tiny shop that sells things, used to test the code map.\n",
    "pyproject.toml": '[project]\nname = "shop"\n',
    "src/shop/__init__.py": '"""The shop package: carts, prices and discounts."""\n',
    "src/shop/cart.py": (
        '"""Carts hold the line items a customer is buying."""\n'
        "from shop.pricing import total, PriceTable\n"
        "from shop.discount import apply_coupon\n\n\n"
        "class ShoppingCart:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def add(self, item):\n        self.items.append(item)\n\n"
        "    def checkout(self, code):\n"
        "        table = PriceTable()\n"
        "        return apply_coupon(total(self.items), code) + table.rate()\n\n"
        "    def _internal_hash(self):\n        return 0\n"),
    "src/shop/pricing.py": (
        '"""Prices and totals of a cart."""\n'
        "from .discount import apply_coupon, _round_cents\n\n\n"
        "class PriceTable:\n"
        "    def rate(self):\n        return 1\n\n\n"
        f"def total(items):\n    value = sum(i.price for i in items)\n{_LONG}\n"
        "    return _round_cents(apply_coupon(value))\n\n\n"
        f"def total_with_tax(items, value=1):\n{_LONG}\n"
        "    return total(items) * 1.2\n"),
    "src/shop/discount.py": (
        '"""Coupons and discounts."""\n\n\n'
        "def apply_coupon(amount, code=None):\n    return amount\n\n\n"
        "def _round_cents(amount):\n    return round(amount, 2)\n\n\n"
        "def add(a, b):\n    return a + b\n"),
    "src/shop/report.py": (
        '"""Sales reports: totals per day."""\n'
        "from shop.cart import ShoppingCart\n"
        "from shop.pricing import total_with_tax\n\n\n"
        "def daily_report(carts):\n"
        "    Übersicht()\n"
        "    return [total_with_tax(c.items) for c in carts if isinstance(c, ShoppingCart)]\n"),
    # A name whose only capital is not ASCII: SQLite's lower() leaves it (so it is not a
    # "specific" name), PostgreSQL's would lower it unless told to compare bytes.
    "src/shop/übersicht.py": (
        '"""Overviews of the shop."""\n\n\n'
        "class Übersicht:\n    pass\n"),
    "web/README.md": "# Web\n\nThe browser front end of the shop, written in TypeScript.\n",
    "web/app.ts": (
        "import { formatPrice } from './format';\n"
        "import { renderCart } from './cart';\n\n"
        "export function render(): string {\n  return formatPrice(3) + renderCart([]);\n}\n"),
    "web/format.ts": (
        "/** Formatting helpers for prices shown in the browser. */\n"
        "export function formatPrice(n: number): string {\n  return `$${n}`;\n}\n"),
    "web/cart.js": (
        "/** The cart widget. */\n"
        "import { formatPrice } from './format';\n\n"
        "export function renderCart(items) {\n"
        "  return items.map((i) => formatPrice(i.price)).join(', ');\n}\n"),
}

QUERIES = [
    ("cart",), ("coupon", "discount"), ("price", "total"), ("format", "browser"),
    ("report", "daily"), ("step", "value"), ("shop",), ("render",), ("tax",),
    ("round", "cent"), ("item",),
]


def aged(path: Path) -> None:
    """Date a file a minute back. The two stores index one after the other, and a stat younger
    than two seconds is recorded as 0 (not trusted): left to the clock, a loaded machine could
    have one store record the real mtime and the other 0, and their snapshots differ."""
    old = time.time() - 60
    os.utime(path, (old, old))


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        aged(path)


@pytest.fixture
def shop(tmp_path):
    """The shop with a history: cart and pricing change together twice."""
    root = new_repo(tmp_path / "shop", FILES, "Initial shop")
    for n in (1, 2):
        for rel in ("src/shop/cart.py", "src/shop/pricing.py"):
            with open(root / rel, "a", encoding="utf-8") as fh:
                fh.write(f"# change {n}\n")
            aged(root / rel)
        git(root, "commit", "-qam", f"Price change {n}")
    return root


NOTES = [
    Note(id="gotcha-coupon", type=NoteType.GOTCHA, title="Coupons round twice",
         body="apply_coupon rounds, and so does the total.", files=("src/shop/discount.py",),
         recorded_at="2024-05-01"),
    Note(id="bug-cart", type=NoteType.BUG, title="Cart loses items",
         body="Concurrent adds race.", files=("src/shop/cart.py", "src/shop/discount.py"),
         recorded_at="2024-06-01"),
    Note(id="gotcha-undated", type=NoteType.GOTCHA, title="Undated caveat", body="No date.",
         links=(Link(Relation.AFFECTS, "src/shop/discount.py"),)),
    Note(id="decision-web", type=NoteType.DECISION, title="TypeScript front end",
         body="The web uses TypeScript.", links=(Link(Relation.ABOUT, "web/app.ts"),),
         recorded_at="2024-01-01"),
]


def add_notes(store) -> None:
    with store.write():
        for note in NOTES:
            store.upsert_note(note, "project", f"notes/{note.id}.md", note.id, 1, 1)


def run_index(store, root: Path) -> None:
    index_code(store, root, SkipRules(), head_commit(root), workers=1)


# --- comparing the two stores ----------------------------------------------------------------

def approx_edges(edges):
    return [(e.src, e.dst, e.rel, e.origin, pytest.approx(e.weight, abs=1e-9)) for e in edges]


def snapshot(store):
    """What the code map's readers see of a store (floats exact: compared with `same`)."""
    files = store.code_files()
    modules = sorted({f.module for f in files})
    paths = [f.path for f in files]
    return {
        # Without the mtimes: a file indexed within RACY_NS of its write is stamped 0 (read
        # again next time), so the two stores, indexed one after the other, may differ there.
        "stamps": {p: s._replace(mtime_ns=0) for p, s in store.file_stamps().items()},
        "count": store.source_file_count(),
        "skipped": store.skipped_counts(),
        "all_paths": store.all_file_paths(),
        "files": [(f.path, f.module, f.language, f.docstring) for f in files],
        "rows": [store.file_row(p)[:4] for p in paths],
        "imports": store.file_imports(),
        "imports_some": store.file_imports(paths[::2]),
        "symbols": {p: store.symbols_of(p) for p in paths},
        "symbols_in": store.symbols_in([*paths[::2], "no/such.py", paths[0]]),
        "defined": sorted(store.defined_names(paths)),
        "module_symbols": {m: store.module_symbols(m) for m in modules},
        "summaries": store.module_summaries(),
        "referencing": sorted(store.referencing(["apply_coupon", "formatPrice", "total"])),
        "notes_by_path": store.notes_by_path(),
        "notes_about": store.notes_about(paths),
        "warnings": {p: store.file_warnings(p, ("gotcha", "bug")) for p in paths},
        "warnings_by_path": store.warnings_by_path(("gotcha", "bug")),
        "note_counts": store.note_counts(),
        "nodes": store.node_count(),
        "languages": store.language_files(),
    }


def floats(store):
    """The numbers of a store: ranks, every edge with its weight, search scores."""
    origins = ["import", "reference", "cochange", "module", "declared", "files"]
    text = {}
    sections = {}
    for terms in QUERIES:
        for common in (False, True):  # FTS5's floored IDF and Lucene's
            query = TextQuery(terms, (1,) * len(terms), common=common)
            text[terms, common] = store.text_search(query, 10, Filters(), DEFAULT_WEIGHTS)
            sections[terms, common] = store.section_search(query, 10)
    paths = store.all_file_paths()
    return {
        "ranks": store.file_ranks(),
        "edges": store.graph_edges(origins),
        "touching": store.graph_edges(["import", "cochange"], paths[:3]),
        "weighted": list(store.weighted_edges(["import", "reference"])),
        "outgoing": sorted(store.outgoing(paths)),
        "text": text,
        "sections": sections,
    }


def assert_same(lite, pg) -> None:
    snap = snapshot(pg)
    assert snap == snapshot(lite)
    assert snap["symbols_in"] == {p: snap["symbols"].get(p, []) for p in snap["symbols_in"]}
    # The pre-tool hook's one read gives each path what `file_warnings` gives it.
    assert {p: snap["warnings_by_path"].get(p, []) for p in snap["warnings"]} == \
        snap["warnings"]
    a, b = floats(lite), floats(pg)
    assert b["ranks"].keys() == a["ranks"].keys()
    assert b["ranks"] == pytest.approx(a["ranks"], abs=1e-9)
    assert approx_edges(b["edges"]) == approx_edges(a["edges"])
    assert approx_edges(b["touching"]) == approx_edges(a["touching"])
    assert [(s, d, pytest.approx(w, abs=1e-9)) for s, d, w in b["weighted"]] == a["weighted"]
    assert [r[:3] for r in b["outgoing"]] == [r[:3] for r in a["outgoing"]]
    for terms in [(t, common) for t in QUERIES for common in (False, True)]:
        assert [i for i, _ in b["text"][terms]] == [i for i, _ in a["text"][terms]], terms
        assert [s for _, s in b["text"][terms]] == pytest.approx(
            [s for _, s in a["text"][terms]], rel=1e-9), terms
        assert [r[:2] for r in b["sections"][terms]] == [r[:2] for r in a["sections"][terms]], \
            terms
        assert [r[2] for r in b["sections"][terms]] == pytest.approx(
            [r[2] for r in a["sections"][terms]], rel=1e-9), terms
    assert pg.counter("sections") == lite.conn.execute("SELECT count(*) FROM sections"
                                                       ).fetchone()[0]


def test_the_indexer_builds_the_same_map_on_both_stores(shop, tmp_path, open_pg):
    lite = SqliteStore(tmp_path / "i.sqlite", Analyzer(["en"]))
    pg = open_pg()
    for store in (lite, pg):
        add_notes(store)
        run_index(store, shop)
    snap = snapshot(pg)
    # The map is not empty: every part of it was compared.
    assert len(snap["files"]) == 9 and snap["summaries"] and snap["notes_about"]
    assert snap["languages"] == {language: sum(f[2] == language for f in snap["files"])
                                 for language in {f[2] for f in snap["files"]} - {None}}
    assert snap["warnings"]["src/shop/discount.py"] == [
        ("bug-cart", "bug", "Cart loses items", "Concurrent adds race."),
        ("gotcha-coupon", "gotcha", "Coupons round twice",
         "apply_coupon rounds, and so does the total."),
        ("gotcha-undated", "gotcha", "Undated caveat", "No date.")]
    edges = floats(pg)["edges"]
    assert {e.origin for e in edges} >= {"import", "reference", "cochange", "module"}
    weights = {e.weight for e in edges if e.origin == "reference"}
    assert len(weights) > 2  # names of several kinds (specific, private, shared) were weighed
    assert [e.weight for e in edges if e.dst == "src/shop/übersicht.py"
            and e.origin == "reference"] == [1.0]
    assert_same(lite, pg)
    assert pg.notes_digest() == lite.notes_digest()

    # An edit that moves definitions and imports, a deleted file, a new file, a new commit.
    (shop / "src/shop/report.py").unlink()
    write(shop, {
        "src/shop/discount.py": (
            '"""Coupons, discounts and gift cards."""\n\n\n'
            "def apply_coupon(amount, code=None):\n    return amount\n\n\n"
            "def redeem_gift_card(amount):\n    return amount\n"),
        "src/shop/gift.py": (
            '"""Gift cards."""\nfrom shop.discount import redeem_gift_card\n\n\n'
            "def GiftCardLedger():\n    return redeem_gift_card(1)\n"),
    })
    git(shop, "add", "-A")
    git(shop, "commit", "-qm", "Gift cards replace rounding")
    for store in (lite, pg):
        run_index(store, shop)
    assert "src/shop/report.py" not in pg.file_stamps()
    assert pg.nodes(["src/shop/discount.py"])["src/shop/discount.py"].body == (
        "Coupons, discounts and gift cards.\n\nGift cards replace rounding\nInitial shop")
    assert_same(lite, pg)

    # An edit inside a function only (the graph does not move), then nothing at all.
    with open(shop / "web/format.ts", "a", encoding="utf-8") as fh:
        fh.write("// currency symbols are configurable\n")
    aged(shop / "web/format.ts")
    for _ in range(2):
        for store in (lite, pg):
            run_index(store, shop)
        assert_same(lite, pg)
    lite.close()


def postings(store, project):
    return store.execute(
        "SELECT term, node, dl, t0, t1, t2, t3, t4, t5 FROM postings WHERE project = %s "
        "ORDER BY 1, 2", (project,)).fetchall()


def _file(subjects=()):
    definitions = (Definition("apply_coupon", "function", 3), Definition("Ledger", "class", 9))
    return CodeFile("src/a.py", "src", "python", 10, 1, "h1", "Coupons and the ledger.",
                    definitions=definitions, subjects=subjects,
                    text="coupon ledger appli coupon rate", chunks=((1, "src a py coupon"),))


def test_new_commit_subjects_reindex_the_body_as_a_fresh_upsert_would(open_pg):
    moved, fresh = open_pg("proj-moved"), open_pg("proj-fresh")
    with moved.write():
        moved.upsert_file(_file(("Round the coupon twice", "Ledger fix")))
        moved.upsert_file(CodeFile("src/b.py", "src", "python", 5, 1, "h2", "Rates.",
                                   text="rate rate"))
    with fresh.write():
        fresh.upsert_file(_file(("Coupon rounding", "Add the gift ledger")))
        fresh.upsert_file(CodeFile("src/b.py", "src", "python", 5, 1, "h2", "Rates.",
                                   text="rate rate"))
    with moved.write():
        assert moved.set_subjects({"src/a.py": ("Coupon rounding", "Add the gift ledger"),
                                   "src/b.py": ()}) == 1
        assert moved.set_subjects({"src/a.py": ("Coupon rounding", "Add the gift ledger")}) == 0
    assert postings(moved, "proj-moved") == postings(fresh, "proj-fresh")
    for name in ("nodes", "tokens", "sections", "section_tokens"):
        assert moved.counter(name) == fresh.counter(name), name
    for terms in (("coupon",), ("gift",), ("round",), ("ledger", "fix"), ("rate",)):
        query = TextQuery(terms, (1,) * len(terms))
        assert moved.text_search(query, 10, Filters(), DEFAULT_WEIGHTS) == \
            fresh.text_search(query, 10, Filters(), DEFAULT_WEIGHTS), terms
    assert moved.nodes(["src/a.py"])["src/a.py"].body == \
        "Coupons and the ledger.\n\nCoupon rounding\nAdd the gift ledger"
    # An upsert without subjects (a re-parse) keeps them.
    with moved.write():
        moved.upsert_file(_file())
    assert postings(moved, "proj-moved") == postings(fresh, "proj-fresh")


def test_a_second_project_sees_nothing_of_the_first(shop, tmp_path, open_pg):
    a, b = open_pg("proj-a"), open_pg("proj-b")
    add_notes(a)
    run_index(a, shop)
    before = (snapshot(a), floats(a))
    assert before[0]["files"]
    query = TextQuery(("cart",), (1,))
    assert b.file_stamps() == {} and b.code_files() == [] and b.all_file_paths() == []
    assert b.graph_edges(["import", "reference", "cochange", "module", "declared"]) == []
    assert list(b.weighted_edges(["import", "reference"])) == []
    assert b.text_search(query, 10, Filters(), DEFAULT_WEIGHTS) == []
    assert b.section_search(query, 10) == []
    assert b.module_summaries() == {} and b.notes_by_path() == {} and b.file_ranks() == {}
    assert b.file_warnings("src/shop/discount.py", ("gotcha", "bug")) == []
    assert b.symbols_of("src/shop/cart.py") == [] and b.file_row("src/shop/cart.py") is None
    assert b.referencing(["apply_coupon"]) == set() and b.defined_names(["src/shop/cart.py"]) \
        == set()
    assert b.node_count() == 0 and b.counter("sections") == 0

    # proj-b indexes its own copy of the repository, then deletes all of it: proj-a unmoved.
    other = tmp_path / "other"
    other.mkdir()
    write(other, {"src/shop/cart.py": FILES["src/shop/cart.py"],
                  "src/shop/discount.py": FILES["src/shop/discount.py"]})
    run_index(b, other)
    assert {f.path for f in b.code_files()} == {"src/shop/cart.py", "src/shop/discount.py"}
    with b.write():
        b.delete_files(b.all_file_paths())
        b.replace_edges("cochange", [])
        b.rebuild_reference_edges()
        b.replace_modules({})
    assert b.code_files() == [] and b.module_summaries() == {}
    assert (snapshot(a), floats(a)) == before


def test_replace_edges_keeps_the_last_of_duplicates_and_upserts_strays(tmp_path, open_pg):
    from loremap.model import Edge

    def e(src, dst, weight, origin="cochange"):
        return Edge(src, dst, "co_changes", origin, weight)

    lite = SqliteStore(tmp_path / "i.sqlite", Analyzer(["en"]))
    pg = open_pg()
    seen = []
    for store in (lite, pg):
        with store.write():
            store.replace_edges("cochange", [e("a", "b", 1.0), e("a", "b", 2.0), e("b", "c", 3.0),
                                             e("c", "a", 1.0)])
            # Only a's edges go; b's edge given again (not a source) replaces the stored one.
            store.replace_edges("cochange", [e("a", "c", 4.0), e("a", "c", 4.5),
                                             e("b", "c", 5.0), e("a", "d", 6.0, "import")],
                                sources=["a"])
        seen.append(store.graph_edges(["cochange", "import"]))
        with store.write():
            store.replace_edges("cochange", [], sources=[])
        seen.append(store.graph_edges(["cochange", "import"]))
        with store.write():
            store.replace_edges("cochange", [])
        seen.append(store.graph_edges(["cochange", "import"]))
    assert seen[:3] == seen[3:]
    assert [(x.src, x.dst, x.weight) for x in seen[0]] == [
        ("a", "c", 4.5), ("a", "d", 6.0), ("b", "c", 5.0), ("c", "a", 1.0)]
    assert [x.origin for x in seen[2]] == ["import"]
    lite.close()


_PER_FILE_DELETES = ("DELETE FROM files ", "DELETE FROM symbols ", "DELETE FROM refs ",
                     "DELETE FROM sections ", "DELETE FROM section_postings ")


def recording(store):
    """Run `store`'s statements as before, keeping each one's text and the plan the
    reference-edge INSERT gets (EXPLAIN in the same transaction, just before it runs)."""
    seen, plans = [], []
    execute = store.execute

    def run(sql, params=None):
        seen.append(" ".join(sql.split()))
        if sql.startswith("INSERT INTO edges") and "'reference'" in sql:
            plans.append("\n".join(r[0] for r in execute("EXPLAIN " + sql, params)))
        return execute(sql, params)

    store.execute = run
    return seen, plans


def test_a_first_index_beside_an_analyzed_project_deletes_nothing_and_never_nests_loops(
        shop, open_pg):
    # The planner's trap of a shared database: proj-a's rows are ANALYZEd, so the statistics
    # of `project` know only proj-a and expect one row of proj-b, however many it writes.
    a, b = open_pg("proj-a"), open_pg("proj-b")
    run_index(a, shop)
    a.execute("ANALYZE")
    seen, plans = recording(b)
    run_index(b, shop)
    assert [s for s in seen if s.startswith(_PER_FILE_DELETES)] == []
    assert len(plans) == 1
    assert "Nested Loop" not in plans[0] and "Hash Join" in plans[0], plans[0]
    assert (snapshot(b), floats(b)) == (snapshot(a), floats(a))  # the same repository

    # The rest of the write keeps the server's planner settings, and so does the session.
    with b.write():
        b.rebuild_reference_edges()
        assert b.execute("SHOW enable_nestloop").fetchone()[0] == "on"
    assert b.execute("SHOW enable_nestloop").fetchone()[0] == "on"

    # A file indexed before still has its old rows removed (only that file's).
    seen.clear()
    with open(shop / "src/shop/discount.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef refund(amount):\n    return -amount\n")
    run_index(b, shop)
    assert sorted(s.split(" WHERE")[0] for s in seen if s.startswith(_PER_FILE_DELETES)) == [
        "DELETE FROM files", "DELETE FROM refs", "DELETE FROM section_postings",
        "DELETE FROM sections", "DELETE FROM symbols"]
    assert b.symbols_of("src/shop/discount.py") == [  # once each: the old rows went first
        ("apply_coupon", "function", 4), ("_round_cents", "function", 8), ("add", "function", 12),
        ("refund", "function", 16)]
