"""The code map end to end: a small multi-language repository with a real git history."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import GOLDEN, git, new_repo

FILES = {
    "README.md": "# Shop\n\nA tiny shop that sells things, used to test the code map.\n",
    "pyproject.toml": '[project]\nname = "shop"\n',
    "src/shop/__init__.py": '"""The shop package: carts, prices and discounts."""\n',
    "src/shop/cart.py": (
        '"""Carts hold the line items a customer is buying."""\n'
        "from shop.pricing import total\n\n\n"
        "class Cart:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def add(self, item):\n        self.items.append(item)\n\n"
        "    def checkout(self):\n        return total(self.items)\n"),
    "src/shop/pricing.py": (
        '"""Prices and totals of a cart."""\n'
        "from .discount import apply_coupon\n\n\n"
        "def total(items):\n    return apply_coupon(sum(i.price for i in items))\n"),
    "src/shop/discount.py": (
        '"""Coupons and discounts."""\n\n\n'
        "def apply_coupon(amount, code=None):\n    return amount\n"),
    "web/README.md": "# Web\n\nThe browser front end of the shop, written in TypeScript.\n",
    "web/app.ts": (
        "import { formatPrice } from './format';\n\n"
        "export function render(): string {\n  return formatPrice(3);\n}\n"),
    "web/format.ts": (
        "/** Formatting helpers for prices shown in the browser. */\n"
        "export function formatPrice(n: number): string {\n  return `$${n}`;\n}\n"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """The shop repository with four commits: cart and pricing change together twice."""
    root = new_repo(tmp_path / "shop", FILES, "Initial shop")
    for n in (1, 2):
        for rel in ("src/shop/cart.py", "src/shop/pricing.py"):
            with open(root / rel, "a", encoding="utf-8") as fh:
                fh.write(f"# change {n}\n")
        git(root, "commit", "-qam", f"Price change {n}")
    with open(root / "src/shop/discount.py", "a", encoding="utf-8") as fh:
        fh.write("# tweak\n")
    git(root, "commit", "-qam", "Tweak coupons")
    monkeypatch.chdir(root)
    return root


def index(cli) -> dict:
    result = cli("index", "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_init_builds_the_map_and_module_pages(shop, cli, golden):
    assert cli("init").code == 0
    lore = shop / ".loremap"
    golden.check(GOLDEN / "shop-map.md", (lore / "map.md").read_text(encoding="utf-8"))
    golden.check(GOLDEN / "shop-module-src-shop.md",
                 (lore / "modules" / "src--shop.md").read_text(encoding="utf-8"))
    assert {p.name for p in (lore / "modules").iterdir()} == {"src--shop.md", "web.md"}


def test_the_map_fits_its_budget_and_names_languages_and_modules(shop, cli):
    from loremap.text import estimate_tokens

    cli("init")
    text = cli("map").out
    assert estimate_tokens(text) <= 500
    assert "Python 4" in text and "TypeScript 2" in text
    assert "[[src--shop|src/shop/]]" in text and "[[web|web/]]" in text
    page = cli("map", "web").out
    assert "The browser front end of the shop" in page
    assert "format.ts" in page and "formatPrice" in page
    missing = cli("map", "nowhere")
    assert missing.code == 1 and "no module nowhere/" in missing.err


def test_show_a_file_gives_module_symbols_imports_importers_and_co_change(shop, cli):
    cli("init")
    cart = json.loads(cli("show", "src/shop/cart.py", "--json").out)
    assert cart["module"] == "src/shop" and cart["language"] == "python"
    assert cart["imports"] == ["src/shop/pricing.py"]
    assert {s[0] for s in cart["symbols"]} >= {"Cart", "add", "checkout"}
    assert cart["changes_with"] == [["src/shop/pricing.py", 0.75]]
    pricing = json.loads(cli("show", "src/shop/pricing.py", "--json").out)
    assert pricing["imports"] == ["src/shop/discount.py"]
    assert pricing["imported_by"] == ["src/shop/cart.py"]
    app = json.loads(cli("show", "web/app.ts", "--json").out)
    assert app["imports"] == ["web/format.ts"]


def test_files_that_others_lean_on_rank_higher(shop, cli):
    cli("init")
    rank = {p: json.loads(cli("show", p, "--json").out)["rank"]
            for p in ("src/shop/cart.py", "src/shop/pricing.py", "src/shop/discount.py")}
    assert rank["src/shop/discount.py"] > rank["src/shop/pricing.py"] > rank["src/shop/cart.py"]


def test_reindexing_an_unchanged_repository_parses_nothing_and_keeps_the_bytes(shop, cli):
    cli("init")
    lore = shop / ".loremap"
    before = {p: p.stat().st_mtime_ns for p in [lore / "map.md", *lore.glob("modules/*.md")]}
    report = index(cli)
    assert (report["parsed"], report["removed"]) == (0, 0)
    os.utime(shop / "src/shop/cart.py")  # touched, same content: hashed, not parsed
    assert index(cli)["parsed"] == 0
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_only_changed_files_are_parsed_and_deleted_or_renamed_files_leave(shop, cli):
    cli("init")
    with open(shop / "src/shop/discount.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef remove_coupon(amount):\n    return amount\n")
    assert index(cli)["parsed"] == 1
    symbols = json.loads(cli("show", "src/shop/discount.py", "--json").out)["symbols"]
    assert "remove_coupon" in {s[0] for s in symbols}
    (shop / "web/format.ts").unlink()
    report = index(cli)
    assert report["removed"] == 1
    assert json.loads(cli("show", "web/app.ts", "--json").out)["imports"] == []
    assert cli("show", "web/format.ts").code == 1
    (shop / "src/shop/pricing.py").rename(shop / "src/shop/prices.py")
    report = index(cli)
    assert (report["parsed"], report["removed"]) == (1, 1)
    assert json.loads(cli("show", "src/shop/prices.py", "--json").out)["imports"] == [
        "src/shop/discount.py"]


def test_notes_about_a_file_show_on_its_page_and_in_show(shop, cli):
    cli("init")
    cli("remember", "-t", "gotcha", "--title", "Coupons apply before tax",
        "--file", "src/shop/discount.py", "-m", "Apply the coupon to the net amount.")
    page = cli("map", "src/shop").out
    assert "[gotcha] Coupons apply before tax" in page
    shown = json.loads(cli("show", "src/shop/discount.py", "--json").out)
    assert shown["notes"] == [["gotcha-coupons-apply-before-tax", "gotcha",
                               "Coupons apply before tax"]]
    assert "1 gotcha" in cli("map").out


def test_a_directory_outside_git_is_walked_with_its_gitignore(tmp_path, cli, monkeypatch):
    root = tmp_path / "plain"
    write(root, {"a.py": "import b\n", "b.py": "X = 1\n", "build/gen.py": "Y = 2\n",
                 "secret.py": "Z = 3\n", ".gitignore": "secret.py\n"})
    monkeypatch.chdir(root)
    assert cli("init").code == 0
    report = index(cli)
    assert report["history"] in ("unchanged", "no git history")
    assert json.loads(cli("show", "a.py", "--json").out)["imports"] == ["b.py"]
    assert cli("show", "secret.py").code == 1
    assert cli("show", "build/gen.py").code == 1


def graph_state(root: Path) -> tuple[list, dict]:
    import sqlite3

    with sqlite3.connect(root / ".loremap" / "index.sqlite") as conn:
        # module -> central file edges carry ranks: compare those to 6 places, like the pages
        edges = conn.execute("SELECT src, dst, rel, origin, round(weight, CASE origin WHEN "
                             "'module' THEN 6 ELSE 9 END) FROM edges "
                             "WHERE origin != 'declared' ORDER BY 1, 2, 3, 4").fetchall()
        ranks = dict(conn.execute("SELECT path, rank FROM files WHERE language IS NOT NULL"))
    return edges, ranks


def test_incremental_edges_and_ranks_match_a_full_rebuild(shop, cli):
    cli("init")
    with open(shop / "src/shop/discount.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef remove_coupon(amount):\n    return amount\n")
    cart = shop / "src/shop/cart.py"
    cart.write_text(cart.read_text(encoding="utf-8").replace(
        "return total(self.items)", "return remove_coupon(total(self.items))"), encoding="utf-8")
    write(shop, {"src/shop/tax.py": "def add_tax(amount):\n    return amount\n"})
    pricing = shop / "src/shop/pricing.py"
    pricing.write_text(pricing.read_text(encoding="utf-8").replace(
        "return apply_coupon(", "return add_tax(apply_coupon(") + ")\n", encoding="utf-8")
    assert index(cli)["parsed"] == 4
    incremental = graph_state(shop)
    assert cli("reindex").code == 0
    full = graph_state(shop)
    assert incremental[0] == full[0]
    assert incremental[1] == {p: pytest.approx(r, abs=1e-9) for p, r in full[1].items()}
    assert ("src/shop/cart.py", "src/shop/discount.py", "references", "reference", 10.0) \
        in full[0]


def test_code_files_are_searchable_by_definition_docstring_and_commit_subject(shop, cli):
    cli("init")

    def found(*args):
        return [h["id"] for h in json.loads(cli("search", *args, "--json").out)["items"]]

    assert found("apply_coupon", "--kind", "file")[0] == "src/shop/discount.py"
    assert "web/format.ts" in found("formatting helpers", "--kind", "file")
    assert found("tweak coupons", "--kind", "file")[0] == "src/shop/discount.py"
    assert found("browser front end", "--kind", "module") == ["web/"]
    assert found("apply_coupon", "--kind", "note") == []


def test_a_file_that_vanishes_while_indexing_is_left_out(shop, cli, monkeypatch):
    import loremap.codemap.index as index_module
    from loremap.codemap.discover import SourceFile

    real = index_module.discover

    def with_ghost(root, rules):
        yield from real(root, rules)
        yield SourceFile("src/shop/ghost.py", "python", 10, 1)  # listed, then gone

    monkeypatch.setattr(index_module, "discover", with_ghost)
    assert cli("init").code == 0
    assert cli("show", "src/shop/ghost.py").code == 1
    assert json.loads(cli("show", "src/shop/cart.py", "--json").out)["imports"] == [
        "src/shop/pricing.py"]


def test_a_closed_pipe_ends_output_quietly(shop, cli):
    import subprocess
    import sys

    cli("init")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        result = subprocess.run([sys.executable, "-m", "loremap", "map"], cwd=shop,
                                stdout=write_end, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "LOREMAP_HOME": str(shop.parent / "home")})
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (0, "")


def test_the_project_name_setting_titles_the_map(shop, cli):
    cli("init")
    config = shop / ".loremap" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[project]\nname = "Shop"\n',
                      encoding="utf-8")
    assert cli("map").out.startswith("# Map of Shop\n")


def test_an_index_built_by_older_rules_is_derived_again_in_full(shop, cli):
    import sqlite3

    cli("init")
    before = graph_state(shop)
    with sqlite3.connect(shop / ".loremap" / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = 'old' WHERE key IN "
                     "('code.parse_version', 'code.graph_version')")
        conn.execute("UPDATE edges SET weight = 99 WHERE origin = 'reference'")
    report = index(cli)
    assert report["parsed"] >= 6  # every source file, although none changed
    assert graph_state(shop)[0] == before[0]


def test_an_edit_that_moves_no_edge_keeps_ranks_and_refreshes_its_module(shop, cli):
    import sqlite3

    cli("init")
    _, ranks = graph_state(shop)
    init = shop / "src/shop/__init__.py"
    init.write_text('"""The shop package: baskets, prices and vouchers."""\n', encoding="utf-8")
    assert index(cli)["parsed"] == 1
    assert graph_state(shop)[1] == ranks
    hits = json.loads(cli("search", "vouchers", "--kind", "module", "--json").out)["items"]
    assert [h["id"] for h in hits] == ["src/shop/"]
    with sqlite3.connect(shop / ".loremap" / "index.sqlite") as conn:
        modules = conn.execute("SELECT id FROM nodes WHERE kind = 'module' ORDER BY id")
        assert [r[0] for r in modules] == ["src/shop/", "web/"]
    assert "baskets, prices and vouchers" in (shop / ".loremap" / "map.md").read_text(
        encoding="utf-8")
    lore = shop / ".loremap"
    pages = {p.name: p.read_bytes() for p in [lore / "map.md", *lore.glob("modules/*.md")]}
    assert cli("reindex").code == 0  # everything derived and rendered again, from scratch
    assert {p.name: p.read_bytes() for p in [lore / "map.md", *lore.glob("modules/*.md")]} \
        == pages


def test_a_changed_tsconfig_re_resolves_every_import(tmp_path, cli, monkeypatch):
    root = tmp_path / "ts"
    write(root, {
        "tsconfig.json": '{"compilerOptions": {"baseUrl": ".", "paths": {"@lib/*": ["old/*"]}}}',
        "src/app.ts": "import { f } from '@lib/util';\nexport const x = f();\n",
        "old/util.ts": "export function f() { return 1; }\n",
        "new/util.ts": "export function f() { return 2; }\n",
    })
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "ts")
    monkeypatch.chdir(root)
    cli("init")
    assert json.loads(cli("show", "src/app.ts", "--json").out)["imports"] == ["old/util.ts"]
    (root / "tsconfig.json").write_text(
        '{"compilerOptions": {"baseUrl": ".", "paths": {"@lib/*": ["new/*"]}}}',
        encoding="utf-8")
    index(cli)
    assert json.loads(cli("show", "src/app.ts", "--json").out)["imports"] == ["new/util.ts"]


def test_a_same_size_edit_within_one_clock_tick_is_still_parsed(shop, cli):
    cli("init")
    path = shop / "src/shop/discount.py"
    path.write_text(path.read_text(encoding="utf-8") + "X = 1\n", encoding="utf-8")
    assert index(cli)["parsed"] == 1
    before = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("X = 1", "Y = 1"),
                    encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert index(cli)["parsed"] == 1
    names = {s[0] for s in json.loads(cli("show", "src/shop/discount.py", "--json").out)
             ["symbols"]}
    assert "Y" in names and "X" not in names
