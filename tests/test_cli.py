"""The commands as a user runs them, through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli_process

EXAMPLE = ["remember", "--type", "decision", "--title", "Use JWT instead of session cookies",
           "--file", "src/auth/login.ts", "--link", "about:concept-authentication",
           "--supersedes", "decision-session-cookies", "-m",
           "Stateless, so it runs on edge runtimes."]


def test_init_creates_the_layout_and_is_harmless_twice(repo, cli):
    first = cli("init")
    assert first.code == 0, first.err
    lore = repo / ".loremap"
    for part in ("config.toml", ".gitignore", "notes", "handoffs", "index.sqlite"):
        assert (lore / part).exists(), part
    assert "index.sqlite" in (lore / ".gitignore").read_text(encoding="utf-8")
    config_before = (lore / "config.toml").read_bytes()
    second = cli("init", "--json")
    assert second.code == 0
    assert json.loads(second.out)["created"] == []
    assert (lore / "config.toml").read_bytes() == config_before


def test_init_in_a_subdirectory_uses_the_git_root(repo, cli, monkeypatch):
    monkeypatch.chdir(repo / "src" / "auth")
    assert cli("init").code == 0
    assert (repo / ".loremap" / "notes").is_dir()
    assert not (repo / "src" / "auth" / ".loremap").exists()


def test_the_readme_example_writes_one_note_in_the_documented_format(project, cli):
    result = cli(*EXAMPLE)
    assert result.code == 0, result.err
    path = project / ".loremap" / "notes" / "decision-use-jwt-instead-of-session-cookies.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\nid: decision-use-jwt-instead-of-session-cookies\n"
                           "type: decision\ntitle: Use JWT instead of session cookies\n"
                           "status: active\nfiles: [src/auth/login.ts]\nlinks:\n"
                           "  - {rel: about, target: concept-authentication}\n"
                           "supersedes: decision-session-cookies\n")
    assert "\n# Use JWT instead of session cookies\n\nStateless, so it runs on edge runtimes.\n" \
        in text
    assert text.endswith("## Links\n- about [[concept-authentication]]\n"
                         "- supersedes [[decision-session-cookies]]\n"
                         "- file [[src--auth|src/auth/login.ts]]\n")
    assert "file_hashes: {src/auth/login.ts: " in text
    assert "commit: " in text and "commit: null" not in text
    # the missing targets are kept and reported, not refused
    assert "concept-authentication" in result.err


def test_body_comes_from_a_file_or_stdin(project, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("From a file.\n", encoding="utf-8")
    assert cli("remember", "-t", "gotcha", "--title", "A", "--body-file", str(body)).code == 0
    assert cli("remember", "-t", "gotcha", "--title", "B", stdin="From stdin.\n").code == 0
    shown_a = json.loads(cli("show", "gotcha-a", "--json").out)
    shown_b = json.loads(cli("show", "gotcha-b", "--json").out)
    assert shown_a["note"]["body"] == "From a file."
    assert shown_b["note"]["body"] == "From stdin."


def test_personal_notes_go_to_the_personal_vault_and_are_searched_too(project, cli,
                                                                       isolated_home):
    result = cli("remember", "--personal", "-t", "preference", "--title", "Prefer pnpm",
                 "-m", "Use pnpm rather than npm in every project.")
    assert result.code == 0, result.err
    assert (isolated_home / "loremap" / "personal" / "notes" / "preference-prefer-pnpm.md"
            ).is_file()
    assert not list((project / ".loremap" / "notes").iterdir())
    hits = json.loads(cli("search", "pnpm", "--json").out)["items"]
    assert [(h["id"], h["scope"]) for h in hits] == [("preference-prefer-pnpm", "personal")]


def test_supersession_marks_the_old_note_in_its_own_file(project, cli):
    cli("remember", "-t", "decision", "--title", "Session cookies", "-m", "Cookies for now.")
    assert cli(*EXAMPLE).code == 0
    old = json.loads(cli("show", "decision-session-cookies", "--json").out)
    assert old["note"]["status"] == "superseded"
    assert old["note"]["superseded_by"] == "decision-use-jwt-instead-of-session-cookies"
    assert old["note"]["valid_to"] is not None
    assert old["linked_from"] == [{"id": "decision-use-jwt-instead-of-session-cookies",
                                   "rel": "supersedes"}]
    hits = json.loads(cli("search", "session cookies", "--kind", "note", "--json").out)["items"]
    assert [h["id"] for h in hits] == ["decision-use-jwt-instead-of-session-cookies"]
    history = json.loads(cli("search", "session cookies", "--status", "superseded",
                             "--kind", "note", "--json").out)["items"]
    assert [h["id"] for h in history] == ["decision-session-cookies"]


def test_list_filters_by_type_and_status(project, cli):
    cli("remember", "-t", "bug", "--title", "Coupon applied twice", "-m", "x")
    cli("remember", "-t", "gotcha", "--title", "Tax rounds per line", "-m", "y")
    cli("forget", "gotcha-tax-rounds-per-line", "--reason", "no longer true")
    everything = json.loads(cli("list", "--json").out)["notes"]
    assert {n["id"] for n in everything} == {"bug-coupon-applied-twice",
                                             "gotcha-tax-rounds-per-line"}
    bugs = json.loads(cli("list", "--type", "bug", "--json").out)["notes"]
    assert [n["id"] for n in bugs] == ["bug-coupon-applied-twice"]
    archived = json.loads(cli("list", "--status", "archived", "--json").out)["notes"]
    assert [n["id"] for n in archived] == ["gotcha-tax-rounds-per-line"]
    human = cli("list")
    assert "gotcha-tax-rounds-per-line" in human.out and "[archived]" in human.out


def test_forget_archives_and_purge_deletes_file_and_rows(project, cli):
    cli("remember", "-t", "bug", "--title", "Coupon applied twice", "-m", "The discount ran "
        "before the total.", "--link", "relates:bug-other")
    assert cli("forget", "bug-coupon-applied-twice", "--reason", "fixed in v2").code == 0
    note = json.loads(cli("show", "bug-coupon-applied-twice", "--json").out)["note"]
    assert note["status"] == "archived" and note["archived_reason"] == "fixed in v2"
    assert json.loads(cli("search", "coupon", "--json").out)["items"] == []
    assert cli("forget", "bug-coupon-applied-twice", "--purge").code == 0
    assert not (project / ".loremap" / "notes" / "bug-coupon-applied-twice.md").exists()
    import sqlite3

    with sqlite3.connect(project / ".loremap" / "index.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM nodes WHERE kind = 'note'").fetchone()[0] == 0
        # every FTS row belongs to a remaining node (the code map's files and modules)
        assert conn.execute("SELECT count(*) FROM fts").fetchone()[0] == conn.execute(
            "SELECT count(*) FROM nodes").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM edges WHERE origin = 'declared'"
                            ).fetchone()[0] == 0
    missing = cli("show", "bug-coupon-applied-twice")
    assert missing.code == 1 and "no note with id" in missing.err


def test_reindex_rebuilds_the_index_from_the_vault_alone(project, cli):
    cli("remember", "-t", "concept", "--title", "Authentication", "-m", "JWT in a cookie.")
    (project / ".loremap" / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{project}/.loremap/index.sqlite{suffix}").unlink(missing_ok=True)
    result = cli("reindex", "--json")
    assert result.code == 0
    assert json.loads(result.out)["indexed"] == 1
    assert [h["id"] for h in json.loads(cli("search", "jwt", "--json").out)["items"]] == [
        "concept-authentication"]


def test_doctor_reports_broken_links_and_a_stale_index_and_fix_repairs(project, cli):
    cli("remember", "-t", "concept", "--title", "Auth", "-m", "x", "--link", "relates:concept-gone")
    # A personal note is in this index too (a shared database is another matter).
    cli("remember", "--personal", "-t", "preference", "--title", "Short functions", "-m", "y")
    note = project / ".loremap" / "notes" / "concept-auth.md"
    note.write_text(note.read_text(encoding="utf-8").replace("x\n", "changed by hand\n"),
                    encoding="utf-8")
    (project / ".loremap" / ".gitignore").unlink()
    report = json.loads(cli("doctor", "--json").out)
    checks = {(f["check"], f["level"]) for f in report["findings"]}
    assert ("links", "warning") in checks
    assert ("index", "error") in checks
    assert ("layout", "warning") in checks
    assert report["ok"] is False
    fixed = cli("doctor", "--fix")
    assert fixed.code == 0, fixed.out
    assert (project / ".loremap" / ".gitignore").exists()
    # A fresh clone has no empty folders (git keeps none): nothing is wrong.
    (project / ".loremap" / "handoffs").rmdir()
    after = json.loads(cli("doctor", "--json").out)
    assert after["ok"] is True
    assert {f["check"] for f in after["findings"] if f["level"] != "ok"} == {"links"}
    assert "preference-short-functions" in cli("list").out


def test_every_data_command_speaks_json(project, cli):
    cli("remember", "-t", "bug", "--title", "Coupon applied twice", "-m", "x")
    for args in (["init"], ["list"], ["search", "coupon"], ["show", "bug-coupon-applied-twice"],
                 ["doctor"], ["reindex"], ["remember", "-t", "bug", "--title", "B", "-m", "y"],
                 ["forget", "bug-b"]):
        result = cli(*args, "--json")
        assert result.code == 0, (args, result.err)
        json.loads(result.out)


def test_version_and_help_answer(project):
    version = run_cli_process("--version", cwd=project)
    assert version.returncode == 0 and version.stdout.startswith("loremap ")
    helped = run_cli_process("--help", cwd=project)
    assert helped.returncode == 0
    for command in ("init", "remember", "search", "doctor", "reindex"):
        assert command in helped.stdout


def test_commands_outside_a_project_say_to_run_init(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("remember", "-t", "bug", "--title", "x", "-m", "y")
    assert result.code == 1
    assert "loremap init" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_an_unexpected_error_exits_3_and_names_the_log(project, cli, monkeypatch,
                                                       isolated_home):
    import loremap.memory.service as service

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(service.Memory, "list_notes", boom)
    result = cli("list")
    assert result.code == 3
    log = isolated_home / "loremap" / "logs" / "loremap.log"
    assert str(log) in result.err
    assert "disk on fire" in log.read_text(encoding="utf-8")


def test_show_json_carries_unknown_keys_and_hashes(project, cli):
    (project / ".loremap" / "notes" / "procedure-deploy.md").write_text(
        "---\nid: procedure-deploy\ntype: procedure\ntitle: Deploy\nreviews: 4\n"
        "successes: 2\nfile_hashes: {src/auth/login.ts: abc123}\n---\nRun make deploy.\n",
        encoding="utf-8")
    note = json.loads(cli("show", "procedure-deploy", "--json").out)["note"]
    assert note["extra"] == {"reviews": 4}
    assert (note["successes"], note["failures"]) == (2, 0)
    assert note["file_hashes"] == {"src/auth/login.ts": "abc123"}


def test_a_title_is_stored_as_it_reads_back(project, cli):
    assert cli("remember", "-t", "gotcha", "--title", "  Spaces   inside  ", "-m", "x").code == 0
    listed = json.loads(cli("list", "--json").out)["notes"]
    shown = json.loads(cli("show", "gotcha-spaces-inside", "--json").out)["note"]
    assert listed[0]["title"] == shown["title"] == "Spaces inside"


def test_remember_warns_when_a_note_of_the_same_type_has_a_similar_title(project, cli):
    first = cli("remember", "-t", "gotcha", "--title", "Coupons apply after the cart total",
                "-m", "x")
    assert first.code == 0 and "similar" not in first.err
    again = cli("remember", "-t", "gotcha", "--title", "Coupons apply after the total", "-m", "y")
    assert again.code == 0
    assert ("a similar note exists: gotcha-coupons-apply-after-the-cart-total "
            "(Coupons apply after the cart total)") in again.err
    other_type = cli("remember", "-t", "decision", "--title", "Coupons apply after the total")
    assert "similar" not in other_type.err


def test_show_a_root_file_names_the_repository_root_and_no_none(project, cli):
    assert cli("index").code == 0
    shown = cli("show", "README.md")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[1] == "module ./ (the repository root) · text, not parsed"
    assert "None" not in shown.out
    nested = cli("show", "src/auth/login.ts").out.splitlines()[1]
    assert nested == "module src/auth/ · typescript"


def test_a_mistyped_command_or_action_is_one_line_naming_the_closest(project, cli):
    for args, meant in ((["serach", "jwt"], "'search'"), (["sync", "puhs"], "'push'"),
                        (["search", "x", "--kind", "nots"], "'note'")):
        result = cli(*args)
        assert result.code == 2, result.err
        assert result.err.count("\n") == 1 and f"did you mean {meant}?" in result.err
        assert "choose from" not in result.err
    unlike = cli("qqqq")
    assert unlike.code == 2 and "did you mean" not in unlike.err
    assert "invalid choice: 'qqqq' (choose from 'init'" in unlike.err


def test_doctor_outside_a_project_says_so_and_still_checks_the_personal_vault(
        tmp_path, cli, monkeypatch, isolated_home):
    monkeypatch.chdir(tmp_path)
    assert cli("remember", "--personal", "-t", "preference", "--title", "Tabs",
               "-m", "Indent with tabs.").code == 0
    result = cli("doctor")
    assert result.code == 0, result.out
    assert "all good" not in result.out
    assert "warn  project: no loremap project here (no .loremap/ or git repository" in result.out
    assert result.out.splitlines()[-1] == "no project here; the personal vault has no errors"
    personal = isolated_home / "loremap" / "personal" / "notes"
    (personal / "preference-tabs.md").write_text("---\nid: [\n---\n", encoding="utf-8")
    broken = cli("doctor", "--json")
    assert broken.code == 1, broken.err
    report = json.loads(broken.out)
    assert report["project"] is None and not report["ok"]
    flagged = {f["check"] for f in report["findings"] if f["level"] != "ok"}
    assert {"project", "notes"} <= flagged  # the malformed file is reported, not raised


def test_doctor_in_a_repository_without_init_names_it(repo, cli):
    result = cli("doctor")
    assert result.code == 0
    assert f"({repo} has no .loremap/)" in result.out
    assert "`loremap init` in the repository" in result.out


def test_the_cli_and_the_hook_write_their_logs_through_one_writer(isolated_home):
    import re
    import subprocess
    import sys

    from loremap.hook import log
    from loremap.logs import log_exception

    log("first line\nsecond  line")
    try:
        raise ValueError("bad\nthing")
    except ValueError as exc:
        where = log_exception(exc)
    logs = isolated_home / "loremap" / "logs"
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ "
    assert re.fullmatch(stamp + "first line second line\n",
                        (logs / "hook.log").read_text(encoding="utf-8"))
    text = where.read_text(encoding="utf-8")
    assert where == logs / "loremap.log"
    assert re.match(stamp + r"pid=\d+ ValueError: bad\nthing\nTraceback", text)
    (logs / "hook.log").unlink()
    (logs / "hook.log").mkdir()  # unwritable: the writer says nothing and raises nothing
    log("lost")
    code = "import sys, loremap.logs; print(sorted(m for m in ('traceback', 'datetime') " \
           "if m in sys.modules))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout
    assert imported.strip() == "[]"  # the hook pays for neither until it writes
