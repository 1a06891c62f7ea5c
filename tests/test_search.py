"""The hybrid search end to end: notes and code of a real git repository, through the CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import git, new_project
from loremap.errors import InvalidInput
from loremap.search import SearchConfig
from test_codemap import FILES

NOTES = [
    ("bug", "Coupon applied twice",
     "The discount ran before the total was recalculated, so checkout counted it twice.",
     ["src/shop/discount.py"]),
    ("decision", "Prices are kept in cents",
     "Integer cents avoid float rounding in totals; format only at the edge.",
     ["src/shop/pricing.py", "web/format.ts"]),
    ("gotcha", "The browser caches formatted prices",
     "Clear the formatter cache after a locale switch.", ["web/format.ts"]),
]


def shared_database(request, monkeypatch):
    """Point loremap at a fresh, migrated PostgreSQL database (the `postgres` runs)."""
    from test_store_contract import migrated

    monkeypatch.setenv("LOREMAP_DATABASE_URL", migrated(request.getfixturevalue("pg_url")))
    monkeypatch.setenv("LOREMAP_PROJECT_KEY", "team/shop")


@pytest.fixture(params=["sqlite", "postgres"])
def shop(request, tmp_path, monkeypatch, cli):
    """The shop repository (Python and TypeScript) with three notes about its files, indexed
    in the embedded SQLite index and in a shared PostgreSQL database: every test of the search
    runs on both (a test about SQLite mode alone asks for `sqlite_only`)."""
    if request.param == "postgres":
        shared_database(request, monkeypatch)
    root = new_project(tmp_path / "shop", FILES, "Initial shop", cli=cli, monkeypatch=monkeypatch)
    for note_type, title, body, files in NOTES:
        args = ["remember", "-t", note_type, "--title", title, "-m", body]
        for path in files:
            args += ["--file", path]
        assert cli(*args).code == 0
    return root


@pytest.fixture
def sqlite_only(request):
    """Skips the PostgreSQL run of a test about the SQLite index file or the core's
    imports."""
    if request.node.callspec.params.get("shop") == "postgres":
        pytest.skip("about SQLite mode only")


def edited(cli):
    """After a hand edit of a note: a shared database sees it once it is pushed."""
    if os.environ.get("LOREMAP_DATABASE_URL"):
        result = cli("sync", "push")
        assert result.code == 0, result.err


def search(cli, *args):
    result = cli("search", *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def ids(cli, *args):
    return [item["id"] for item in search(cli, *args)["items"]]


def test_notes_and_code_come_back_together_each_saying_why(shop, cli):
    found = search(cli, "why is the coupon applied twice")
    by_id = {item["id"]: item for item in found["items"]}
    assert found["items"][0]["id"] == "bug-coupon-applied-twice"
    assert "src/shop/discount.py" in by_id
    assert any(w.startswith("matches") for w in by_id["bug-coupon-applied-twice"]["why"])
    assert 'linked to "Coupon applied twice"' in by_id["src/shop/discount.py"]["why"]
    assert found["tokens"] == sum(item["tokens"] for item in found["items"])
    text = cli("search", "why is the coupon applied twice").out
    assert text.startswith(
        "[bug] Coupon applied twice — .loremap/notes/bug-coupon-applied-twice.md")
    assert "why: " in text
    assert text.rstrip().splitlines()[-1].startswith(f"({len(found['items'])} items, ~")


def test_a_path_named_in_the_question_comes_first(shop, cli):
    found = search(cli, "what does web/format.ts do with numbers")
    first = found["items"][0]
    assert first["id"] == "web/format.ts"
    assert "named in the question" in first["why"]


def test_a_code_looking_name_finds_the_file_that_defines_it(shop, cli):
    found = search(cli, "calling formatPrice( with a negative amount")
    first = found["items"][0]
    assert first["id"] == "web/format.ts"
    assert "defines formatPrice (named in the question)" in first["why"]
    assert first["details"][0].startswith("formatPrice (function, line 2)")


def test_a_note_id_or_title_in_the_question_is_an_entity(shop, cli):
    assert ids(cli, "see bug-coupon-applied-twice for context")[0] == "bug-coupon-applied-twice"
    item = search(cli, "is prices are kept in cents still true")["items"][0]
    assert item["id"] == "decision-prices-are-kept-in-cents"
    assert "its title is in the question" in item["why"]


def test_imports_bring_neighbours_and_say_so(shop, cli):
    assert cli("index").code == 0
    found = search(cli, "apply_coupon", "--kind", "file")
    whys = {item["id"]: item["why"] for item in found["items"]}
    assert found["items"][0]["id"] == "src/shop/discount.py"
    assert "imports src/shop/discount.py" in whys["src/shop/pricing.py"]


def test_filters_by_kind_type_and_path(shop, cli):
    assert set(ids(cli, "prices", "--kind", "note")) <= {n for n in ids(cli, "prices")}
    assert all(i.startswith(("gotcha-",)) for i in ids(cli, "prices", "--type", "gotcha"))
    assert ids(cli, "prices", "--type", "gotcha") == ["gotcha-the-browser-caches-formatted-prices"]
    under_web = ids(cli, "prices cents", "--file", "web/")
    assert "web/format.ts" in under_web and "decision-prices-are-kept-in-cents" in under_web
    assert not [i for i in under_web if i.startswith("src/")]
    assert "bug-coupon-applied-twice" not in under_web


def test_superseded_archived_and_quarantined_notes_are_never_current(shop, cli):
    assert cli("remember", "-t", "decision", "--title", "Prices are kept in decimal strings",
               "--supersedes", "decision-prices-are-kept-in-cents",
               "-m", "Decimal strings keep cents exact.").code == 0
    assert cli("forget", "gotcha-the-browser-caches-formatted-prices").code == 0
    assert cli("remember", "-t", "gotcha", "--title", "Price API token", "--quarantine", "-m",
               "token ghp_" + "a1B2c3D4e5" * 4 + " for prices").code == 0
    current = ids(cli, "prices kept", "--kind", "note")
    assert current == ["decision-prices-are-kept-in-decimal-strings"]
    history = search(cli, "prices kept", "--kind", "note", "--history")["items"]
    old = next(i for i in history if i["id"] == "decision-prices-are-kept-in-cents")
    assert old["status"] == "superseded"
    assert "[superseded by decision-prices-are-kept-in-decimal-strings]" in old["text"]
    asked = ids(cli, "formatted prices", "--status", "archived")
    assert asked == ["gotcha-the-browser-caches-formatted-prices"]


def test_as_of_returns_what_was_valid_that_day(shop, cli):
    notes = shop / ".loremap" / "notes"
    path = notes / "decision-prices-are-kept-in-cents.md"
    text = path.read_text(encoding="utf-8")
    recorded = next(line for line in text.splitlines() if line.startswith("recorded_at:"))
    valid_from = next(line for line in text.splitlines() if line.startswith("valid_from:"))
    text = text.replace(recorded, "recorded_at: 2024-01-01T09:00:00Z")
    text = text.replace(valid_from, "valid_from: 2024-01-01")
    text = text.replace("valid_to: null", "valid_to: 2025-06-01")
    text = text.replace("status: active", "status: superseded")
    path.write_text(text, encoding="utf-8")
    edited(cli)
    assert ids(cli, "prices cents", "--kind", "note", "--as-of", "2024-03-01") == [
        "decision-prices-are-kept-in-cents"]
    assert "decision-prices-are-kept-in-cents" not in ids(
        cli, "prices cents", "--kind", "note", "--as-of", "2025-07-01")
    assert "decision-prices-are-kept-in-cents" not in ids(cli, "prices cents", "--kind", "note")
    assert ids(cli, "prices cents", "--kind", "note", "--as-of", "2023-01-01") == []


def test_a_note_whose_file_changed_is_flagged_with_the_commits_since(shop, cli):
    assert "stale" not in json.dumps(search(cli, "coupon applied twice")["items"][0]["stale"])
    target = shop / "src/shop/discount.py"
    for n in (1, 2):
        target.write_text(target.read_text(encoding="utf-8") + f"# fix {n}\n", encoding="utf-8")
        git(shop, "commit", "-qam", f"Fix coupons {n}")
    item = search(cli, "coupon applied twice")["items"][0]
    assert item["stale"] == ["src/shop/discount.py changed since this note (2 commits)"]
    assert "⚠ src/shop/discount.py changed since this note (2 commits)" in item["text"]
    target.unlink()
    item = search(cli, "coupon applied twice")["items"][0]
    assert item["stale"] == ["src/shop/discount.py is gone since this note"]


def test_unanswerable_and_trivial_questions_get_nothing(shop, cli):
    for question in ("banana bread recipe", "how do refunds work in the payment gateway",
                     "yes", "continue", "ok thanks"):
        found = search(cli, question)
        assert found["abstained"] and found["items"] == [], question
        assert found["reason"]
    out = cli("search", "banana bread recipe").out
    assert out.startswith("nothing relevant in memory (")
    assert not search(cli, "why is the coupon applied twice")["abstained"]


def test_the_budget_bounds_the_answer(shop, cli):
    assert cli("index").code == 0
    everything = search(cli, "prices coupon cart total", "--budget", "0", "--limit", "50")
    small = search(cli, "prices coupon cart total", "--budget", "120")
    assert 0 < small["tokens"] <= 120
    assert len(small["items"]) < len(everything["items"])
    assert small["left_out"] > 0
    assert "more over the budget" in cli("search", "prices coupon cart total", "--budget",
                                         "120").out


def test_terms_expand_the_question(shop, cli):
    assert search(cli, "money troubles", "--kind", "note")["abstained"]
    found = search(cli, "money troubles", "--terms", "cents", "rounding", "--kind", "note")
    assert found["items"] and found["items"][0]["id"] == "decision-prices-are-kept-in-cents", found


def test_a_long_pasted_question_keeps_its_rarest_terms(shop, cli):
    filler = " ".join(f"word{n}" for n in range(400))
    long_query = f"{filler} the coupon was applied twice at checkout"
    found = search(cli, long_query)
    assert found["items"][0]["id"] == "bug-coupon-applied-twice"
    assert len(found["terms"]) <= SearchConfig().max_terms


def test_personal_notes_are_searched_too(shop, cli):
    assert cli("remember", "--personal", "-t", "preference", "--title",
               "Prefer small coupon commits", "-m", "One coupon change per commit.").code == 0
    found = search(cli, "coupon commits")["items"]
    mine = next(i for i in found if i["id"] == "preference-prefer-small-coupon-commits")
    assert mine["scope"] == "personal" and "(personal)" in mine["text"]


def test_text_that_looks_like_query_syntax_is_only_text(shop, cli):
    for query in ('"coupon', "coupon OR", "NEAR(coupon", "col:coupon", "*", "-", "(", "a AND"):
        result = cli("search", "--json", "--", query)
        assert result.code == 0, (query, result.err)


def test_bad_search_arguments_are_one_line_errors(shop, cli):
    for args, needle in ((["x", "--as-of", "yesterday"], "not a date"),
                         (["x", "--budget", "-5"], "whole number"),
                         (["x", "--tuning", "ppr"], "key=value"),
                         (["x", "--tuning", "speed=3"], "unknown search config key"),
                         (["x", "--tuning", "ppr=fast"], "expected float")):
        result = cli("search", *args)
        assert result.code in (1, 2), args
        assert needle in result.err and result.err.count("\n") == 1, (args, result.err)


def test_the_vector_list_with_the_test_embedder(shop, cli, monkeypatch):
    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash")
    only_vectors = "bm25=0,entities=0,ppr=0"
    found = search(cli, "coupon applied twice", "--tuning", only_vectors, "--kind", "note")
    assert found["items"][0]["id"] == "bug-coupon-applied-twice"
    assert "close in meaning to the question" in found["items"][0]["why"]
    from loremap.app import App

    app = App.open(shop)
    try:
        stored = app.store.vector_models()
    finally:
        app.close()
    assert stored[0][:2] == ("hash-256", 256) and stored[0][2] >= len(NOTES)
    # A rewritten note loses its vector and gets a new one on the next search.
    path = shop / ".loremap" / "notes" / "bug-coupon-applied-twice.md"
    path.write_text(path.read_text(encoding="utf-8").replace("counted it twice",
                                                             "counted it redundantly"),
                    encoding="utf-8")
    edited(cli)
    found = search(cli, "redundantly", "--tuning", only_vectors, "--kind", "note")
    assert found["items"] and found["items"][0]["id"] == "bug-coupon-applied-twice", found
    monkeypatch.setenv("LOREMAP_EMBEDDER", "word2vec")
    result = cli("search", "coupon")
    assert result.code == 1 and "unknown search.embedder" in result.err


def test_eval_scores_a_dataset_and_compares_configurations(shop, cli, tmp_path):
    dataset = tmp_path / "gold.jsonl"
    rows = [
        {"query": "coupon applied twice", "gold": ["bug-coupon-applied-twice"]},
        {"query": "formatting prices in the browser", "gold": ["web/format.ts"]},
        {"query": "integer cents", "terms": ["rounding"],
         "gold": ["decision-prices-are-kept-in-cents"]},
    ]
    dataset.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = cli("eval", str(dataset), "--compare", "ppr=0", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["n"] == 3
    assert report["metrics"]["recall@10"]["mean"] == 1.0
    assert report["compared"]["label"] == "ppr=0.0"
    text = cli("eval", str(dataset)).out
    assert "ndcg@10" in text and "mrr" in text
    dataset.write_text('{"query": "x", "gold": []}\n', encoding="utf-8")
    bad = cli("eval", str(dataset))
    assert bad.code == 1 and "gold.jsonl:1:" in bad.err and bad.err.count("\n") == 1


def test_config_parsing():
    assert SearchConfig.parse("") == SearchConfig()
    config = SearchConfig.parse("ppr=0.5, mmr=0.7,abstain=no,weights=1:1:1:1:1:1")
    assert (config.ppr, config.mmr, config.abstain) == (0.5, 0.7, False)
    assert config.weights == (1.0,) * 6
    assert SearchConfig.parse(config.describe()) == config
    with pytest.raises(InvalidInput, match="give 6 numbers"):
        SearchConfig.parse("weights=1:2")


def test_config_from_a_toml_file(tmp_path):
    path = tmp_path / "tuning.toml"
    path.write_text("[search]\nppr = 0\nseeds = 3\n", encoding="utf-8")
    assert SearchConfig.parse(str(path)) == SearchConfig(ppr=0.0, seeds=3)
    path.write_text("[search\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="cannot read the search config"):
        SearchConfig.parse(str(path))


def test_an_index_of_schema_2_is_upgraded_and_refilled(shop, cli, sqlite_only):
    index = shop / ".loremap" / "index.sqlite"
    index.unlink()
    from loremap.store.sqlite import schema

    conn = sqlite3.connect(index, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at REAL NOT NULL)")
    for number, step in enumerate(schema.MIGRATIONS[:2], start=1):
        step(conn)
        conn.execute("INSERT INTO migrations VALUES (?, ?, 0)", (number, step.__name__))
    conn.execute("COMMIT")
    conn.close()
    assert ids(cli, "coupon applied twice", "--kind", "note")[0] == "bug-coupon-applied-twice"
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT max(version) FROM migrations").fetchone()[0] == len(
            schema.MIGRATIONS)


def test_a_recall_imports_nothing_heavy(shop, cli, sqlite_only):
    """The prompt hook runs this path: no YAML, no tree-sitter, no git process when nothing is
    stale, no third-party import beyond the stemmer."""
    import time

    old = time.time() - 60  # files younger than two seconds are re-read on every command
    for path in (shop / ".loremap" / "notes").glob("*.md"):
        os.utime(path, (old, old))
    assert cli("search", "coupon").code == 0  # the index is up to date now
    script = (
        "import sys\n"
        "from loremap.app import App\n"
        "from loremap.use.fresh import ALWAYS\n"
        "from loremap.use.recall import Question, recall\n"
        "with App.open() as app:\n"
        "    found = recall(app, Question('why is the coupon applied twice'), ALWAYS).found\n"
        "assert found.items, found\n"
        "print(' '.join(sorted(sys.modules)))\n")

    done = subprocess.run([sys.executable, "-c", script], cwd=shop, capture_output=True,
                          text=True, env={**os.environ}, timeout=60, check=True)
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    heavy = {"yaml", "tree_sitter", "pathspec", "subprocess", "dataclasses", "numpy"}
    assert not loaded & heavy, loaded & heavy


def test_a_note_is_not_buried_under_code_that_repeats_its_words(shop, cli):
    for k in range(8):
        lines = [f'"""Refunds issued, part {k}."""']
        lines += [f"def refund_issued_{k}_{n}(order):\n    return order  # refund issued\n"
                  for n in range(20)]
        (shop / "src" / "shop" / f"refunds_{k}.py").write_text("\n".join(lines),
                                                               encoding="utf-8")
    assert cli("index").code == 0
    assert cli("remember", "-t", "procedure", "--title", "How refunds are issued",
               "-m", "The nightly job sends them in one batch.").code == 0
    assert cli("remember", "-t", "gotcha", "--title", "Nightly batch timing",
               "-m", "Refunds are issued after midnight UTC, not at checkout.").code == 0
    found = search(cli, "how are refunds issued")["items"]
    assert found[0]["id"] == "procedure-how-refunds-are-issued"
    assert "its title says what the question asks" in found[0]["why"]
    with_notes = ids(cli, "when are refunds issued")
    without = ids(cli, "when are refunds issued", "--tuning", "notes=0")
    note = "gotcha-nightly-batch-timing"
    assert with_notes.index(note) < (without.index(note) if note in without else 99)


def test_index_renders_the_notes_even_right_after_the_index_was_dropped(shop, cli, sqlite_only):
    index = shop / ".loremap" / "index.sqlite"
    for path in shop.joinpath(".loremap").glob("index.sqlite*"):
        path.unlink()
    assert not index.exists()
    assert cli("index").code == 0
    text = (shop / ".loremap" / "map.md").read_text(encoding="utf-8")
    assert "Notes: 1 bug, 1 decision, 1 gotcha." in text


def test_file_prefixes_keep_dot_folders(shop, cli):
    (shop / ".github").mkdir()
    (shop / ".github" / "release.py").write_text('"""Release the shop."""\n', encoding="utf-8")
    git(shop, "add", "-A")
    git(shop, "commit", "-qm", "Release script")
    assert cli("index").code == 0
    under = ids(cli, "release the shop", "--file", ".github/")
    assert under[0] == ".github/release.py" and all(i.startswith(".github/") for i in under)
    assert ".github/release.py" in ids(cli, "release the shop", "--file", ".")
