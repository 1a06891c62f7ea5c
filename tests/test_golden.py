"""Golden files for what an agent reads: the recall brief `loremap search` prints on a small fixed
project, and the MCP tool definitions of both catalogues (every session pays for them).

A change to either shows up as a diff of a file under tests/fixtures/golden/. They are rewritten
only by `pytest --update-golden` (then read the diff), never edited by hand.
"""

from __future__ import annotations

import pytest

from conftest import GOLDEN, new_project
from test_codemap import FILES

# The shop of the code map's tests, with two notes about its files.
NOTES = [
    ("gotcha", "Coupons apply after the cart total",
     "apply_coupon gets the summed total, never one line at a time.", "src/shop/discount.py"),
    ("decision", "Prices are formatted only in the browser",
     "web/format.ts is the one place a price becomes text.", "web/format.ts"),
]
QUERIES = [
    "why is the coupon applied to the total",
    "how are prices formatted in the browser",
]


@pytest.fixture
def shop(tmp_path, monkeypatch, cli):
    """The shop, committed at a fixed date, after `loremap init` and two `remember`s."""
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(key, "2026-01-02T03:04:05Z")
    root = new_project(tmp_path / "shop", FILES, "Initial shop", cli=cli, monkeypatch=monkeypatch)
    for note_type, title, body, path in NOTES:
        done = cli("remember", "--type", note_type, "--title", title, "-m", body, "--file", path)
        assert done.code == 0, done.err
    return root


def test_the_recall_brief_of_the_shop_reads_as_its_golden_file(shop, cli, golden):
    briefs = []
    for query in QUERIES:
        done = cli("search", *query.split())
        assert done.code == 0, done.err
        briefs.append(f"$ loremap search {query}\n{done.out}")
    golden.check(GOLDEN / "recall-shop.txt", "\n".join(briefs))


@pytest.mark.parametrize("profile", ["lean", "full"])
def test_the_tool_definitions_read_as_their_golden_files(profile, golden):
    from loremap.mcp.catalogue import tool_definitions

    golden.check_json(GOLDEN / f"mcp-tools-{profile}.json", tool_definitions(profile))
