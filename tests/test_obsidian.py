"""`.loremap/` opened as an Obsidian vault: every `[[wikilink]]` in it resolves to a file of
the vault, as Obsidian resolves one (a path from the vault's root, or a file name unique in the
vault), so its graph shows code and lore connected: map.md -> modules, module -> the modules it
depends on and its notes, note -> notes and the module pages of its files."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import git

WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")


def resolve(vault: Path, target: str) -> Path | None:
    """The file `[[target]]` opens in Obsidian: `target` as a path from the vault's root (with
    `.md` added when it has no extension), else the one file of that name anywhere in it."""
    target = target.strip()
    for candidate in (vault / target, vault / f"{target}.md"):
        if candidate.is_file():
            return candidate
    name = Path(target).name
    named = [p for p in vault.rglob("*") if p.is_file() and p.name in (name, f"{name}.md")]
    return named[0] if len(named) == 1 else None


def links(vault: Path) -> dict[Path, list[str]]:
    return {p: WIKILINK.findall(p.read_text(encoding="utf-8")) for p in vault.rglob("*.md")}


def test_every_wikilink_of_the_vault_resolves_and_connects_code_and_lore(
        project: Path, cli: Any) -> None:
    shop = project / "src" / "shop"
    shop.mkdir(parents=True)
    (shop / "cart.py").write_text('"""The cart."""\nfrom shop.discount import off\n',
                                  encoding="utf-8")
    (shop / "discount.py").write_text('"""Coupons."""\n\n\ndef off(x):\n    return x\n',
                                      encoding="utf-8")
    (project / "src" / "util").mkdir()
    (project / "src" / "util" / "clock.ts").write_text(
        "export function now() { return 1; }\n", encoding="utf-8")
    (project / "src" / "auth" / "login.ts").write_text(
        'import { now } from "../util/clock";\nexport function login() { return now(); }\n',
        encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "shop")
    for argv in (
            ("-t", "concept", "--title", "Sessions", "-m", "What a session is."),
            ("-t", "decision", "--title", "Tokens expire", "-m", "Five minutes.",
             "-f", "src/auth/login.ts", "-l", "about:concept-sessions"),
            ("-t", "gotcha", "--title", "Coupons round twice", "-m", "See the setup doc.",
             "-f", "src/shop/discount.py", "-l", "about:docs/setup.md"),
    ):
        done = cli("remember", *argv)
        assert done.code == 0, done.err
    assert cli("index").code == 0
    vault = project / ".loremap"
    found = links(vault)
    unresolved = {(p.relative_to(vault).as_posix(), t) for p, ts in found.items() for t in ts
                  if resolve(vault, t) is None}
    assert unresolved == set()
    edges = Counter()
    for page, targets in found.items():
        for target in targets:
            to = resolve(vault, target)
            assert to is not None
            edges[(page.parent.name, to.parent.name)] += 1
    assert edges[(".loremap", "modules")] >= 2  # map.md -> the modules
    assert edges[("modules", "modules")] >= 2  # auth depends on util, util used by auth
    assert edges[("modules", "notes")] >= 2  # a module page -> its notes
    assert edges[("notes", "notes")] >= 1  # a note -> the concept it is about
    assert edges[("notes", "modules")] >= 3  # a note -> its files' and paths' modules
    note = (vault / "notes" / "decision-tokens-expire.md").read_text(encoding="utf-8")
    assert "- file [[src--auth|src/auth/login.ts]]" in note
    assert "- about [[concept-sessions]]" in note
    # docs/ has no code: it gets a page of its own listing the note that names it.
    docs = (vault / "modules" / "docs.md").read_text(encoding="utf-8")
    assert "None in the code map" in docs and "[[gotcha-coupons-round-twice]]" in docs
    # A re-index with nothing changed writes nothing (the pages stay diffable).
    before = {p: p.read_bytes() for p in vault.rglob("*.md")}
    assert cli("index").code == 0
    assert {p: p.read_bytes() for p in vault.rglob("*.md")} == before


def test_doctor_brings_an_older_links_section_up_to_date(project: Path, cli: Any) -> None:
    assert cli("remember", "-t", "decision", "--title", "Tokens expire", "-m", "Five minutes.",
               "-f", "src/auth/login.ts").code == 0
    path = project / ".loremap" / "notes" / "decision-tokens-expire.md"
    text = path.read_text(encoding="utf-8")
    older = text.replace("\n## Links\n- file [[src--auth|src/auth/login.ts]]\n", "\n")
    assert older != text
    path.write_text(older, encoding="utf-8")  # as loremap wrote it before it linked files
    found = cli("doctor")
    assert "links-section: 1 note(s)" in found.out and "decision-tokens-expire" in found.out
    assert path.read_text(encoding="utf-8") == older  # only --fix writes
    assert "(fixed)" in cli("doctor", "--fix").out
    assert path.read_text(encoding="utf-8") == text
    assert "links-section" not in cli("doctor").out
