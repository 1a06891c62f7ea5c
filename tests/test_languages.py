"""Several languages in one project: `text.languages = ["pt", "en"]` stems every word with both
stemmers, on the SQLite index and on a shared PostgreSQL database alike, through the CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import new_project, new_repo
from loremap.text import Analyzer
from test_search import shared_database

NOTES = [
    ("decision", "Sessão expira após uma hora",
     "A sessão do usuário expira depois de uma hora sem atividade; o token é renovado no login."),
    ("decision", "Decisões de arquitetura ficam em papéis",
     "Cada decisão registra os papéis das equipes e as configurações dos canais."),
    ("gotcha", "Session cookie refreshed on every request",
     "The session cookie is refreshed on each request, so an open tab never logs out."),
    ("bug", "Coupon applied twice",
     "The discount ran before the total was recalculated, so checkout counted it twice."),
]


def set_languages(root: Path, languages: str) -> None:
    config = root / ".loremap" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert 'languages = ["en"]' in text
    config.write_text(text.replace('languages = ["en"]', f"languages = {languages}"),
                      encoding="utf-8")


def remember_all(cli) -> None:
    for note_type, title, body in NOTES:
        result = cli("remember", "-t", note_type, "--title", title, "-m", body)
        assert result.code == 0, result.err


@pytest.fixture(params=["sqlite", "postgres"])
def bilingual(request, tmp_path, monkeypatch, cli):
    """A project whose notes are in Portuguese and English, with languages pt and en, on the
    embedded SQLite index and on a shared PostgreSQL database."""
    if request.param == "postgres":
        shared_database(request, monkeypatch)
    return bilingual_project(tmp_path, monkeypatch, cli)


def bilingual_project(tmp_path, monkeypatch, cli) -> Path:
    root = new_project(tmp_path / "app", {"README.md": "# app\n"},
                       cli=cli, monkeypatch=monkeypatch)
    set_languages(root, '["pt", "en"]')
    remember_all(cli)
    return root


def search(cli, *args: str) -> dict:
    result = cli("search", *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def ids(cli, *args: str) -> list[str]:
    return [item["id"] for item in search(cli, *args)["items"]]


def test_a_portuguese_plural_finds_the_note_that_has_its_singular(bilingual, cli):
    assert ids(cli, "sessões")[0] == "decision-sessao-expira-apos-uma-hora"
    assert ids(cli, "sessoes")[0] == "decision-sessao-expira-apos-uma-hora"  # typed unaccented


def test_a_portuguese_singular_finds_the_note_that_has_its_plural(bilingual, cli):
    assert ids(cli, "decisão")[0] == "decision-decisoes-de-arquitetura-ficam-em-papeis"
    assert ids(cli, "papel")[0] == "decision-decisoes-de-arquitetura-ficam-em-papeis"
    assert ids(cli, "canal")[0] == "decision-decisoes-de-arquitetura-ficam-em-papeis"


def test_english_plurals_and_singulars_still_meet_in_the_same_project(bilingual, cli):
    assert "gotcha-session-cookie-refreshed-on-every-request" in ids(cli, "sessions")
    assert ids(cli, "coupons applied")[0] == "bug-coupon-applied-twice"


def test_a_portuguese_question_finds_the_portuguese_note_in_plain_text(bilingual, cli):
    result = cli("search", "quando as sessões expiram?")
    assert result.code == 0, result.err
    assert result.out.startswith("[decision] Sessão expira após uma hora — "
                                 ".loremap/notes/decision-sessao-expira-apos-uma-hora.md")


def test_english_alone_leaves_portuguese_plurals_apart(tmp_path, monkeypatch, cli):
    # The same notes under the English default: what the second language adds.
    monkeypatch.chdir(new_repo(tmp_path / "app", {"README.md": "# app\n"}))
    assert cli("init").code == 0
    remember_all(cli)
    assert "decision-sessao-expira-apos-uma-hora" not in ids(cli, "sessões")


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_adding_a_language_rebuilds_the_index_and_says_so(store, request, tmp_path,
                                                           monkeypatch, cli):
    if store == "postgres":
        shared_database(request, monkeypatch)
    root = new_project(tmp_path / "app", {"README.md": "# app\n"},
                       cli=cli, monkeypatch=monkeypatch)
    remember_all(cli)
    set_languages(root, '["pt", "en"]')
    found = search(cli, "sessões")
    before, after = Analyzer(["en"]).signature, Analyzer(["pt", "en"]).signature
    assert any(f"analyzer changed from {before} to {after}" in w for w in found["warnings"])
    assert found["items"][0]["id"] == "decision-sessao-expira-apos-uma-hora"
    assert not any("analyzer changed" in w for w in search(cli, "sessões")["warnings"])


def test_an_index_built_by_the_first_language_alone_is_rebuilt(tmp_path, monkeypatch, cli):
    # An index of pt,en from before every language stemmed (rules 2) holds none of the English
    # stems of its Portuguese words nor the singulars of its plurals.
    index = bilingual_project(tmp_path, monkeypatch, cli) / ".loremap" / "index.sqlite"
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE meta SET value = 'pt,en (rules 2)' WHERE key = 'analyzer.languages'")
    found = search(cli, "sessões")
    assert any("analyzer changed from pt,en (rules 2) to pt,en (rules 3)" in w
               for w in found["warnings"])
    assert found["items"][0]["id"] == "decision-sessao-expira-apos-uma-hora"


@pytest.mark.parametrize("languages", ['["pt", "klingon"]', "[]"])
def test_a_bad_language_is_one_line_and_changes_nothing(project, cli, languages):
    notes = project / ".loremap" / "notes"
    set_languages(project, languages)
    result = cli("remember", "-t", "gotcha", "--title", "Nada", "-m", "Nada muda.")
    assert result.code == 1 and result.out == ""
    line = result.err.strip()
    assert "\n" not in line and line.startswith("loremap: error: text.languages: ")
    assert ("unknown language 'klingon'" in line) if "klingon" in languages else (
        "at least one language" in line)
    assert list(notes.glob("*.md")) == []
