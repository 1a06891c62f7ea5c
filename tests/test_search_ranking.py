"""What a first search must find: a small project whose answer is said in other words than the
question's, and items that show the definitions a question is about."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import git, new_project
from loremap.search.render import definitions, file_snippet
from loremap.text import Analyzer

NOTEBOOK = {
    "src/notebook/disk.py": (
        '"""Note files on disk, replaced whole.\n\n'
        "Each note is first written to a temporary file beside its target, flushed and\n"
        "fsynced, then `os.replace` swaps it in: a crash leaves the old note or the new one.\n"
        '"""\n\n'
        "import os\n\n\n"
        "def write_atomic(path, text):\n"
        '    """Write `text` to `path` through a temporary sibling and `os.replace`."""\n'
        '    tmp = path + ".tmp"\n'
        '    with open(tmp, "w", encoding="utf-8") as fh:\n'
        "        fh.write(text)\n"
        "        fh.flush()\n"
        "        os.fsync(fh.fileno())\n"
        "    os.replace(tmp, path)\n\n\n"
        "def write_note(folder, name, text):\n"
        '    """Write one note file atomically."""\n'
        '    write_atomic(os.path.join(folder, name + ".md"), text)\n'),
    "src/notebook/cli.py": (
        '"""The command line: parse the arguments, run a command, print its result."""\n\n'
        "import argparse\n\n\n"
        "def parser():\n"
        "    out = argparse.ArgumentParser()\n"
        '    out.add_argument("command")\n'
        "    return out\n\n\n"
        "def main(argv):\n"
        "    args = parser().parse_args(argv)\n"
        "    print(args.command)\n"),
    "src/notebook/names.py": (
        '"""Note names: what a title becomes in a path, made safe for any file system."""\n\n'
        "import re\n\n"
        '_UNSAFE = re.compile(r"[^a-z0-9-]+")\n\n\n'
        "def slug(title):\n"
        '    return _UNSAFE.sub("-", title.lower()).strip("-")\n'),
}

NOTES = [
    ("gotcha", "A cached prefix must stay a hit",
     "Capping the cached prefix at what the real call read looks safe but is wrong after a "
     "compaction: the larger context was charged again on every call."),
    ("decision", "Tool schemas are hand-written",
     "The schemas are written by hand so that every property stays short."),
    ("concept", "Sessions",
     "A session is one run of the agent, from its first prompt to its last answer."),
]


@pytest.fixture
def notebook(tmp_path, monkeypatch, cli):
    """A small project whose atomic note writer never says "safe", beside an unrelated note and
    a file that do."""
    root = new_project(tmp_path / "notebook", NOTEBOOK, "Notebook",
                       cli=cli, monkeypatch=monkeypatch)
    for note_type, title, body in NOTES:
        assert cli("remember", "-t", note_type, "--title", title, "-m", body).code == 0
    return root


def search(cli, *args):
    result = cli("search", *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)["items"]


def test_the_file_that_writes_notes_atomically_answers_how_they_are_written_safely(notebook,
                                                                                   cli):
    items = search(cli, "how", "are", "note", "files", "written", "safely")
    ranked = [item["id"] for item in items]
    assert "src/notebook/disk.py" in ranked[:3], ranked
    assert ranked.index("src/notebook/disk.py") < ranked.index(
        "gotcha-a-cached-prefix-must-stay-a-hit"), ranked


def test_a_file_item_lists_the_definitions_the_question_is_about_first(notebook, cli):
    helpers = "".join(f"def helper_{n}(value):\n    return value\n\n\n" for n in range(12))
    (notebook / "src" / "notebook" / "ledger.py").write_text(
        '"""The ledger of a notebook: entries, totals and what is owed."""\n\n\n' + helpers
        + "def refund_order(order):\n    return -order\n", encoding="utf-8")
    assert cli("index").code == 0
    items = search(cli, "how", "is", "an", "order", "refunded")
    ledger = next(item for item in items if item["id"] == "src/notebook/ledger.py")
    assert ledger["details"][0] == "refund_order", ledger["details"]
    assert len(ledger["details"]) == 8


def test_definitions_named_then_matching_then_the_most_important():
    analyzer = Analyzer(["en"])
    defs = [("_cache", "constant", 3), ("Parser", "class", 10), ("_parse_one", "function", 20),
            ("parse", "function", 40), ("render_note", "function", 60),
            ("write_note", "function", 80), ("__init__", "method", 12),
            ("__init__", "method", 90), ("LIMIT", "constant", 2)]
    dfs = {"write": 40, "note": 9}
    shown = definitions(defs, {"parse"}, dfs, analyzer.terms)
    # Named in the question (with kind and line); holding both terms; holding the rarer one;
    # then public names (types first) before private ones (functions, then methods, then
    # constants); `__init__` once.
    assert shown == ("parse (function, line 40)", "write_note", "render_note", "Parser",
                     "LIMIT", "_parse_one", "__init__", "_cache")
    assert definitions(defs, set(), {}, analyzer.terms, limit=3) == ("Parser", "parse",
                                                                     "render_note")
    assert definitions([], set(), dfs, analyzer.terms) == ()


def test_a_file_without_a_docstring_shows_its_commit_subjects_apart():
    body = "Fix the login redirect\nAdd the OAuth provider\nBump the dependencies"
    assert file_snippet(body) == ("Fix the login redirect · Add the OAuth provider · "
                                  "Bump the dependencies")
    assert file_snippet("One-line docstring.\n\nFix a\nFix b") == "One-line docstring."
    assert file_snippet("") == ""
    long = "\n".join(f"Subject number {n} of a busy file" for n in range(10))
    clipped = file_snippet(long, 60)
    assert len(clipped) == 60 and clipped.endswith("…")


def test_commit_subjects_of_a_file_read_apart_in_its_search_item(notebook, cli):
    script = notebook / "web" / "ledger.js"
    script.parent.mkdir()
    script.write_text("export function ledgerTotal(rows) {\n  return rows.length;\n}\n",
                      encoding="utf-8")
    git(notebook, "add", "-A")
    git(notebook, "commit", "-qm", "Ledger totals in the browser")
    script.write_text("export function ledgerTotal(rows) {\n  return rows.length + 1;\n}\n",
                      encoding="utf-8")
    git(notebook, "commit", "-qam", "Count the header row too")
    assert cli("index").code == 0
    items = search(cli, "ledgerTotal")
    item = next(item for item in items if item["id"] == "web/ledger.js")
    assert item["snippet"] == "Count the header row too · Ledger totals in the browser"
    assert "Count the header row too · Ledger totals in the browser" in item["text"]


def test_an_index_built_under_older_analysis_rules_is_rebuilt(notebook, cli):
    index = notebook / ".loremap" / "index.sqlite"
    with sqlite3.connect(index) as conn:  # as an index built before irregular verb forms
        conn.execute("UPDATE meta SET value = 'en' WHERE key = 'analyzer.languages'")
    conn.close()
    result = cli("search", "who", "wrote", "the", "tool", "schemas", "--json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert any(f"analyzer changed from en to {Analyzer(['en']).signature}" in w
               for w in found["warnings"]), found["warnings"]
    assert found["items"][0]["id"] == "decision-tool-schemas-are-hand-written"
    with sqlite3.connect(index) as conn:
        recorded = conn.execute("SELECT value FROM meta WHERE key = 'analyzer.languages'"
                                ).fetchone()[0]
    conn.close()
    assert recorded == Analyzer(["en"]).signature
    # Once: the next command finds the index in line with the analyzer (the code comes back
    # with the next `loremap index`, as after a change of languages).
    again = json.loads(cli("search", "who", "wrote", "the", "tool", "schemas", "--json").out)
    assert not any("analyzer changed" in w for w in again["warnings"]), again["warnings"]
