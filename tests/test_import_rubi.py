"""`loremap import rubi`: a Rubi vault (built from its documented format) into the vault, through
the one import path: mapping, the supersede chain, aliases, search in Portuguese, doctor, an
idempotent re-import, updates, deletions, secrets, the dry run and each kind of bad input."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from loremap.app import App
from loremap.imports.items import Deleted, Item
from loremap.imports.rubi import read_vault
from loremap.imports.run import run_import
from loremap.model import Note
from loremap.vault.frontmatter import parse_note
from rubi_vault import HANDOFFS, NODES, node, write_vault

Cli = Callable[..., Result]


def notes_dir(project: Path) -> Path:
    return project / ".loremap" / "notes"


def note(project: Path, note_id: str) -> Note:
    return parse_note((notes_dir(project) / f"{note_id}.md").read_text(encoding="utf-8"),
                      note_id)


def audit_count(project: Path, op: str = "import") -> int:
    if not (project / ".loremap" / "audit.sqlite").exists():
        return 0
    with sqlite3.connect(project / ".loremap" / "audit.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM audit WHERE op = ?", (op,)).fetchone()[0])


def stats(project: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size)
            for p in notes_dir(project).glob("*.md")}


def imported(cli: Cli, *args: str) -> dict[str, Any]:
    result = cli("import", "rubi", *args, "--json")
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_a_rubi_vault_maps_onto_loremap_notes(project: Path, cli: Cli) -> None:
    write_vault(project)
    report = imported(cli, str(project))
    counts = report["counts"]
    assert counts["new"] == len(NODES) + len(HANDOFFS)
    assert counts["type:decision"] == 2 and counts["type:gotcha"] == 1
    assert counts["type:concept"] == 1 and counts["type:procedure"] == 1
    assert counts["type:episode"] == 1

    old, new = note(project, "usar-cookies-de-sessao"), note(project, "usar-jwt")
    assert (new.type.value, new.status.value, new.supersedes) == (
        "decision", "active", "usar-cookies-de-sessao")
    assert (old.status.value, old.superseded_by) == ("superseded", "usar-jwt")
    assert old.valid_to is not None
    assert new.files == ("src/auth/login.ts",) and new.file_hashes
    assert {(link.rel.value, link.target) for link in new.links} == {
        ("about", "conceito-autenticacao"), ("causes", "armadilha-relogio-do-token")}
    assert new.source.value == "import" and new.origin_tool == "rubi"
    assert new.origin == "usar-jwt" and new.origin_digest
    assert (new.recorded_at, new.commit) == ("2026-03-01T00:00:00Z", "5d6e7f8")
    text = (notes_dir(project) / "usar-jwt.md").read_text(encoding="utf-8")
    assert "source: import:rubi\n" in text and "origin: usar-jwt\n" in text
    gotcha = note(project, "armadilha-relogio-do-token")
    assert gotcha.title == "Relógio do servidor adianta e o token expira cedo"
    # The handoff is an episode note with its date.
    episode = note(project, "handoff-2026-03-02t18-00-00z")
    assert episode.type.value == "episode" and episode.recorded_at == "2026-03-02T18:00:00Z"
    assert "handoff" in episode.tags
    # A procedure's track record is kept for the ranking.
    assert audit_count(project) == len(NODES) + len(HANDOFFS)


def test_a_slug_that_is_no_loremap_id_gets_one_and_stays_an_alias(project: Path,
                                                                    cli: Cli) -> None:
    write_vault(project)
    imported(cli, str(project))
    made = note(project, "procedure-publicar-uma-versao-nova")
    assert "Procedimento_Publicar" in made.aliases
    assert (made.successes, made.failures) == (3, 1)
    shown = cli("show", "Procedimento_Publicar")
    assert shown.code == 0, shown.err
    assert "procedure-publicar-uma-versao-nova" in shown.out


def test_a_taken_slug_is_mapped_and_links_follow_it(project: Path, cli: Cli) -> None:
    assert cli("remember", "--type", "concept", "--title", "Outra coisa", "-m",
               "Um conceito escrito antes.").code == 0
    taken = next(p.stem for p in notes_dir(project).glob("*.md"))
    nodes = {taken: NODES["conceito-autenticacao"].replace("titulo: Autenticação do painel",
                                                           "titulo: Autenticação do painel"),
             "usar-jwt": NODES["usar-jwt"].replace("alvo: conceito-autenticacao",
                                                   f"alvo: {taken}")}
    write_vault(project, nodes, {})
    imported(cli, str(project))
    mapped = note(project, "concept-autenticacao-do-painel")
    assert taken in mapped.aliases and mapped.origin == taken
    assert note(project, taken).source.value != "import"  # the older note is untouched
    jwt = note(project, "usar-jwt")
    assert ("about", "concept-autenticacao-do-painel") in {
        (link.rel.value, link.target) for link in jwt.links}


def test_search_finds_the_portuguese_text_and_doctor_is_clean(project: Path, cli: Cli) -> None:
    write_vault(project)
    imported(cli, str(project))
    found = cli("search", "relógio adiantado token expirado", "--json")
    assert found.code == 0, found.err
    ids = [item["id"] for item in json.loads(found.out)["items"]]
    assert "armadilha-relogio-do-token" in ids[:3]
    current = cli("search", "cookies de sessão autenticação", "--json")
    ids = [item["id"] for item in json.loads(current.out)["items"]]
    assert "usar-cookies-de-sessao" not in ids  # superseded: never served as current
    doctor = cli("doctor", "--json")
    report = json.loads(doctor.out)
    problems = [f for f in report["findings"] if f["level"] in ("error", "warning")
                and f["check"] not in ("wiring", "daemon")]  # this machine's, not the vault's
    assert not problems, problems


def test_a_second_import_changes_nothing(project: Path, cli: Cli) -> None:
    write_vault(project)
    imported(cli, str(project))
    before, records = stats(project), audit_count(project)
    again = imported(cli, str(project))
    assert again["counts"]["new"] == again["counts"]["updated"] == 0
    assert again["counts"]["unchanged"] == len(NODES) + len(HANDOFFS)
    assert stats(project) == before  # no file touched
    assert audit_count(project) == records  # no audit record


def test_a_changed_source_updates_its_note_only(project: Path, cli: Cli) -> None:
    rubi = write_vault(project)
    imported(cli, str(project))
    before = stats(project)
    path = rubi / "conhecimento" / "conceito-autenticacao.md"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "pelo cabeçalho Authorization", "pelo cabeçalho Authorization ou pelo cookie assinado"),
        encoding="utf-8")
    again = imported(cli, str(project))
    assert (again["counts"]["updated"], again["counts"]["new"]) == (1, 0)
    after = stats(project)
    changed = {name for name in after if after[name] != before[name]}
    assert changed == {"conceito-autenticacao.md"}
    assert "cookie assinado" in note(project, "conceito-autenticacao").body


def test_deleted_forgets_the_imported_note_and_an_unknown_one_is_a_no_op(project: Path,
                                                                          cli: Cli) -> None:
    write_vault(project)
    imported(cli, str(project))
    records = audit_count(project)
    with App.open(cwd=project) as app:
        report = run_import(app, "rubi", [Deleted("conceito-autenticacao"),
                                          Deleted("nunca-importado")])
    assert [(n.id, n.change) for n in report.notes] == [("conceito-autenticacao", "archived")]
    gone = note(project, "conceito-autenticacao")
    assert gone.status.value == "archived" and gone.archived_reason == "deleted in rubi"
    assert audit_count(project) == records + 1
    with App.open(cwd=project) as app:
        again = run_import(app, "rubi", [Deleted("conceito-autenticacao"),
                                         Deleted("nunca-importado")])
    assert again.notes == [] and audit_count(project) == records + 1


def test_a_secret_is_quarantined_never_stored_in_clear(project: Path, cli: Cli) -> None:
    key = "AKIA" + "Z7Q2W4E6R8T0Y1U3"
    stem, text = node("chave-da-aws", "armadilha", "A chave da AWS no script",
                      f"O script de deploy tinha aws_access_key_id = {key} no código.")
    write_vault(project, {stem: text}, {})
    report = imported(cli, str(project))
    assert report["counts"]["new"] == 1
    stored = (notes_dir(project) / "chave-da-aws.md").read_text(encoding="utf-8")
    assert key not in stored and "REDACTED" in stored
    assert note(project, "chave-da-aws").status.value == "quarantined"
    assert any("quarantined" in w for w in report["warnings"])
    found = cli("search", "chave AWS script deploy", "--json")
    ids = [item["id"] for item in json.loads(found.out)["items"]]
    assert "chave-da-aws" not in ids
    again = imported(cli, str(project))  # the same secret: the same quarantined note
    assert again["counts"]["unchanged"] == 1 and again["counts"]["updated"] == 0


def test_a_secret_in_a_title_never_becomes_a_file_name(project: Path, cli: Cli) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    nodes = {"Com Token": f"---\ntipo: armadilha\ntitulo: O token {token} vazou\n---\n"
                          "Trocamos o token no mesmo dia.\n"}
    write_vault(project, nodes, {})
    report = imported(cli, str(project))
    assert report["counts"]["new"] == 1
    (path,) = notes_dir(project).glob("*.md")
    assert token.lower() not in path.name.lower() and "ghp" not in path.name
    text = path.read_text(encoding="utf-8")
    assert token not in text and "quarantined" in text


def test_a_dry_run_writes_nothing_and_says_what_it_would(project: Path, cli: Cli) -> None:
    write_vault(project, {**NODES, "estranho": "---\ntipo: fantasia\n---\n# Estranho\n\nx\n"})
    report = imported(cli, str(project), "--dry-run")
    assert report["dry_run"] is True
    assert report["counts"]["new"] == len(NODES) + len(HANDOFFS)
    assert len(report["notes"]) == 5 and report["notes"][0]["id"]
    assert [s["where"] for s in report["skipped"]] == ["conhecimento/estranho.md"]
    assert list(notes_dir(project).glob("*.md")) == []
    assert audit_count(project) == 0
    text = cli("import", "rubi", str(project), "--dry-run")
    out = text.out
    assert "would import from rubi: 6 new" in out and "? conhecimento/estranho.md" in out


def test_bad_input_is_one_line_each_and_the_rest_is_imported(project: Path, cli: Cli,
                                                              tmp_path: Path) -> None:
    outside = tmp_path / "segredo.md"
    outside.write_text("---\ntipo: conceito\n---\n# Fora\n\nfora da pasta\n", encoding="utf-8")
    nodes = {
        "bom": "---\ntipo: conceito\n---\n# Um nó bom\n\nEste entra.\n",
        "tipo-desconhecido": "---\ntipo: fantasia\n---\n# Nada\n\nnão entra\n",
        "yaml-quebrado": "---\ntipo: [conceito\n---\n# Quebrado\n\nnão entra\n",
        "alvo-sumido": "---\ntipo: conceito\nliga:\n  - {rel: sobre, alvo: nao-existe}\n"
                       "  - {rel: afeta, alvo: ../../etc/passwd}\n"
                       "  - {rel: afeta, alvo: src/auth/login.ts}\n---\n"
                       "# Ligado ao nada\n\nentra sem a ligação\n",
        "enorme": "---\ntipo: conceito\n---\n# Enorme\n\n" + "palavra " * 200_000 + "\n",
        "corpo-grande": "---\ntipo: conceito\n---\n# Grande\n\n" + "texto " * 100_000 + "\n",
    }
    rubi = write_vault(project, nodes, {})
    os.symlink(outside, rubi / "conhecimento" / "link-para-fora.md")
    os.symlink("bom.md", rubi / "conhecimento" / "link-para-dentro.md")
    report = imported(cli, str(project))
    reasons = {s["where"]: s["reason"] for s in report["skipped"]}
    assert "unknown tipo 'fantasia'" in reasons["conhecimento/tipo-desconhecido.md"]
    assert "malformed frontmatter" in reasons["conhecimento/yaml-quebrado.md"]
    assert "over the importer's" in reasons["conhecimento/enorme.md"]
    assert "vault.max_note_bytes" in reasons["conhecimento/corpo-grande.md"]
    assert "symlink" in reasons["conhecimento/link-para-fora.md"]
    assert "symlink" in reasons["conhecimento/link-para-dentro.md"]
    assert all("\n" not in reason for reason in reasons.values())
    assert sorted(p.stem for p in notes_dir(project).glob("*.md")) == ["alvo-sumido", "bom"]
    assert [(link.rel.value, link.target) for link in note(project, "alvo-sumido").links] == [
        ("affects", "src/auth/login.ts")]
    lines = [s["reason"] for s in report["skipped"] if s["where"] == "conhecimento/alvo-sumido.md"]
    assert len(lines) == 2 and any("../../etc/passwd" in line for line in lines)
    assert any("about -> nao-existe" in line for line in lines)


def test_a_folder_linked_out_of_the_source_is_refused(project: Path, cli: Cli,
                                                      tmp_path: Path) -> None:
    elsewhere = tmp_path / "alhures"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("---\ntipo: conceito\n---\n# X\n\nfora\n", encoding="utf-8")
    rubi = project / ".rubi"
    rubi.mkdir()
    os.symlink(elsewhere, rubi / "conhecimento")
    (rubi / "handoffs").mkdir()
    report = imported(cli, str(project))
    assert report["counts"]["new"] == 0
    assert [s["where"] for s in report["skipped"]] == ["conhecimento"]
    assert "refused" in report["skipped"][0]["reason"]


def test_a_file_outside_the_repository_is_left_out_of_the_note(project: Path,
                                                                cli: Cli) -> None:
    stem, text = node("fora", "conceito", "Arquivos de fora", "Cita arquivos que não estão.",
                      arquivos="[../../etc/passwd, src/auth/login.ts, nao/existe.py]")
    write_vault(project, {stem: text}, {})
    report = imported(cli, str(project))
    assert note(project, "fora").files == ("src/auth/login.ts",)
    assert len([s for s in report["skipped"] if s["where"] == "conhecimento/fora.md"]) == 2


def test_personal_notes_land_in_the_personal_vault(project: Path, cli: Cli,
                                                   isolated_home: Path) -> None:
    pessoal = isolated_home / "rubi-vault" / "_pessoal"
    pessoal.mkdir(parents=True)
    (pessoal / "prefiro-pt.md").write_text(
        "---\ntipo: preferencia\n---\n# Respostas em português\n\nSempre responda em "
        "português do Brasil.\n", encoding="utf-8")
    report = imported(cli, str(pessoal))
    assert report["notes"][0]["personal"] is True
    personal = isolated_home / "loremap" / "personal" / "notes" / "prefiro-pt.md"
    assert "origin: _pessoal/prefiro-pt" in personal.read_text(encoding="utf-8")
    assert list(notes_dir(project).glob("*.md")) == []
    assert imported(cli, str(pessoal))["counts"]["unchanged"] == 1


def test_the_reader_yields_items_and_never_writes(tmp_path: Path) -> None:
    write_vault(tmp_path)
    entries = list(read_vault(tmp_path))
    items = [e for e in entries if isinstance(e, Item)]
    assert {i.origin for i in items} >= {"usar-jwt", "usar-cookies-de-sessao",
                                         "handoffs/2026-03-02T18-00-00Z"}
    jwt = next(i for i in items if i.origin == "usar-jwt")
    assert jwt.supersedes == "usar-cookies-de-sessao" and jwt.type == "decision"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rubi"]


def test_not_a_rubi_vault_is_one_line(project: Path, cli: Cli, tmp_path: Path) -> None:
    result = cli("import", "rubi", str(tmp_path))
    assert result.code == 1
    assert "is not a Rubi vault" in result.err
    assert len(result.err.strip().splitlines()) == 1
    missing = cli("import", "rubi")
    assert missing.code == 1 and "needs a folder" in missing.err


def test_without_the_cuba_reader_the_cli_says_so_in_one_line(project: Path, cli: Cli,
                                                             tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "loremap.imports.cuba", None)  # as if it were not there
    done = cli("import", "cuba", "--bundle", str(tmp_path))
    assert done.code == 1
    assert done.err.strip() == ("loremap: error: the cuba-memorys reader is unavailable in "
                                "this version of loremap (nothing was imported)")


def test_the_parser_offers_every_importer_the_import_path_knows() -> None:
    from loremap.cli.parser import build_parser
    from loremap.imports.sources import TOOLS

    parser = build_parser(["import"])
    assert parser.parse_args(["import", "rubi", "."]).tool == "rubi"
    for tool in TOOLS:
        assert parser.parse_args(["import", tool]).tool == tool


def test_cuba_needs_exactly_one_source(project: Path, cli: Cli, tmp_path: Path) -> None:
    both = cli("import", "cuba", "--bundle", str(tmp_path), "--database", "postgresql://x")
    assert both.code == 1 and "one source" in both.err
    mixed = cli("import", "rubi", str(tmp_path), "--bundle", str(tmp_path))
    assert mixed.code == 1 and "--bundle and --database are cuba's" in mixed.err
    path = cli("import", "cuba", str(tmp_path))
    assert path.code == 1 and "not a PATH" in path.err


def test_a_large_import_draws_its_progress_bar_on_a_terminal(project: Path) -> None:
    from test_progress import on_a_terminal

    nodes = dict(node(f"no-{i}", "conceito", f"Conceito número {i}", f"Texto do conceito {i}.")
                 for i in range(120))
    write_vault(project, nodes, {})
    code, out, shown = on_a_terminal("import", "rubi", str(project), cwd=project)
    assert code == 0, shown
    assert "importing from rubi [" in shown and "120/120" in shown
    assert "imported from rubi: 120 new" in out
    code, _, quiet = on_a_terminal("import", "rubi", str(project), "--json", cwd=project)
    assert code == 0 and "importing from rubi" not in quiet


def test_an_unknown_import_tool_in_a_note_is_one_line(project: Path, cli: Cli) -> None:
    from loremap.errors import MalformedNote

    text = ("---\nid: concept-x\ntype: concept\ntitle: X\nsource: import:Not A Tool\n---\n"
            "# X\n\nbody\n")
    with pytest.raises(MalformedNote, match="'source'"):
        parse_note(text, "concept-x.md")
    good = parse_note(text.replace("import:Not A Tool", "import:rubi"), "concept-x.md")
    assert (good.source.value, good.origin_tool) == ("import", "rubi")


def test_a_link_to_an_item_that_fails_its_checks_is_left_out(project: Path, cli: Cli) -> None:
    nodes = {"a": "---\ntipo: conceito\nliga:\n  - {rel: sobre, alvo: b}\n---\n# A\n\nTexto.\n",
             "b": "---\ntipo: conceito\n---\n# B\n",
             "c": "---\ntipo: decisao\nsubstitui: b\n---\n# C\n\nSubstitui o vazio.\n"}
    write_vault(project, nodes, {})
    report = imported(cli, str(project))
    assert sorted(p.stem for p in notes_dir(project).glob("*.md")) == ["a", "c"]
    assert note(project, "a").links == () and note(project, "c").supersedes is None
    lines = {(s["where"], s["reason"].split(":")[0]) for s in report["skipped"]}
    assert ("conhecimento/b.md", "body") in lines  # "body: the body is empty: say what ..."
    assert ("conhecimento/a.md", "link about -> b") in lines
    assert ("conhecimento/c.md", "supersedes b") in lines
    doctor = json.loads(cli("doctor", "--json").out)
    assert not [f for f in doctor["findings"] if f["check"] == "links"
                and f["level"] != "ok"]


def test_the_import_path_takes_any_reader_s_items(project: Path) -> None:
    """What a reader of another tool (cuba-memorys) yields: an error with its remedy, a
    procedure's track record, a row quarantined in the source, a type loremap has not."""
    items = [
        Item("cuba", "7", "error", "Pool exhausted", body="The pool ran out of connections.",
             error="psycopg.errors.TooManyConnections: too many clients already",
             remedy="12", where="errors/7.json"),
        Item("cuba", "12", "procedure", "Raise the pool size", body="Set pool_max to 40.",
             successes=5, failures=1, where="procedures/12.json"),
        Item("cuba", "13", "concept", "A row kept out", body="Quarantined there.",
             status="quarantined", where="entities/13.json"),
        Item("cuba", "14", "entity", "Not a loremap type", body="x", where="entities/14.json"),
    ]
    with App.open(cwd=project) as app:
        report = run_import(app, "cuba", items)
    assert [(n.id, n.change) for n in report.notes] == [
        ("error-pool-exhausted", "new"), ("procedure-raise-the-pool-size", "new"),
        ("concept-a-row-kept-out", "new")]
    error = note(project, "error-pool-exhausted")
    assert error.remedy == "procedure-raise-the-pool-size" and error.signature
    assert error.source.value == "import" and error.origin_tool == "cuba"
    procedure = note(project, "procedure-raise-the-pool-size")
    assert (procedure.successes, procedure.failures) == (5, 1)
    assert note(project, "concept-a-row-kept-out").status.value == "quarantined"
    (skipped,) = report.skipped
    assert skipped.where == "entities/14.json" and "unknown note type 'entity'" in skipped.reason
