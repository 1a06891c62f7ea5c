"""Notes edited by hand, pulled with git, or deleted are picked up by the next command."""

from __future__ import annotations

import json
import os

from loremap.text import Analyzer


def ids_of(cli, *args):
    return [h["id"] for h in json.loads(cli("search", *args, "--json").out)["items"]]


def test_a_note_edited_by_hand_is_reindexed_by_the_next_command(project, cli):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    path = project / ".loremap" / "notes" / "gotcha-tax-rounding.md"
    path.write_text(path.read_text(encoding="utf-8").replace("per invoice", "per line item"),
                    encoding="utf-8")
    assert ids_of(cli, "item") == ["gotcha-tax-rounding"]
    assert ids_of(cli, "invoice") == []


def test_a_note_written_by_another_tool_is_picked_up(project, cli):
    (project / ".loremap" / "notes" / "concept-ledger.md").write_text(
        "---\nid: concept-ledger\ntype: concept\ntitle: The ledger\n---\nDouble entry.\n",
        encoding="utf-8")
    assert ids_of(cli, "double entry") == ["concept-ledger"]


def test_a_deleted_file_leaves_the_index(project, cli):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    (project / ".loremap" / "notes" / "gotcha-tax-rounding.md").unlink()
    assert ids_of(cli, "invoice") == []
    assert json.loads(cli("list", "--json").out)["notes"] == []


def test_a_touched_but_unchanged_file_is_not_reparsed(project, cli, monkeypatch):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    path = project / ".loremap" / "notes" / "gotcha-tax-rounding.md"
    os.utime(path, ns=(1, 1))
    import loremap.store.sqlite.store as store

    calls = []
    original = store.SqliteStore.upsert_note
    monkeypatch.setattr(store.SqliteStore, "upsert_note",
                        lambda self, *a, **k: calls.append(a) or original(self, *a, **k))
    assert ids_of(cli, "invoice") == ["gotcha-tax-rounding"]
    assert calls == []  # the content hash matched: only the stat was refreshed
    assert ids_of(cli, "invoice") == ["gotcha-tax-rounding"]


def test_a_note_that_becomes_malformed_leaves_the_index_with_a_warning(project, cli):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    path = project / ".loremap" / "notes" / "gotcha-tax-rounding.md"
    path.write_text("---\nid: [\n---\n", encoding="utf-8")
    result = cli("search", "invoice", "--json")
    data = json.loads(result.out)
    assert data["items"] == []
    assert any("gotcha-tax-rounding.md:" in w for w in data["warnings"])


def test_changing_languages_rebuilds_the_index(project, cli):
    cli("remember", "-t", "gotcha", "--title", "Arredondamento", "-m", "Arredondar por linha.")
    config = project / ".loremap" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace('["en"]', '["pt", "en"]'),
                      encoding="utf-8")
    result = cli("list", "--json")
    assert result.code == 0
    before, after = Analyzer(["en"]).signature, Analyzer(["pt", "en"]).signature
    assert any(f"analyzer changed from {before} to {after}" in w
               for w in json.loads(result.out)["warnings"])
    assert ids_of(cli, "arredondado") == ["gotcha-arredondamento"]


def test_a_same_size_edit_within_the_same_clock_tick_is_still_seen(project, cli):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    path = project / ".loremap" / "notes" / "gotcha-tax-rounding.md"
    before = path.stat()
    assert ids_of(cli, "invoice") == ["gotcha-tax-rounding"]
    path.write_text(path.read_text(encoding="utf-8").replace("invoice", "receipt"),
                    encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert path.stat().st_size == before.st_size
    assert ids_of(cli, "receipt") == ["gotcha-tax-rounding"]


def test_an_unchanged_vault_is_checked_without_reading_index_rows(project, cli, monkeypatch):
    cli("remember", "-t", "gotcha", "--title", "Tax rounding", "-m", "Round per invoice.")
    path = project / ".loremap" / "notes" / "gotcha-tax-rounding.md"
    os.utime(path, ns=(10**18, 10**18))  # an old, settled file: not racy
    assert ids_of(cli, "invoice") == ["gotcha-tax-rounding"]
    import loremap.store.sqlite.store as store

    def forbidden(self):
        raise AssertionError("note_stamps read although the vault signature matched")

    monkeypatch.setattr(store.SqliteStore, "note_stamps", forbidden)
    assert ids_of(cli, "invoice") == ["gotcha-tax-rounding"]
