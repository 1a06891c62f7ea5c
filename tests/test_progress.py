"""Progress bars of the long commands (`reindex`, `xray`, `eval`, `sync push|pull`): drawn on
stderr when it is a terminal, never with `--json`, never into a pipe. The commands run as a
person runs them, with stderr on a pseudo-terminal (`pty`), and their progress callbacks are
driven directly."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import run_cli_process
from transcripts import generate


def on_a_terminal(*args: str, cwd: Path, env: dict[str, str] | None = None
                  ) -> tuple[int, str, str]:
    """`loremap ARGS` with stderr on a pseudo-terminal and stdout on a pipe: (exit code,
    stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "loremap", *args], cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, **(env or {})})
    os.close(slave)
    shown = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed its side
                return
            if not data:
                return
            shown.extend(data)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, out.decode("utf-8"), shown.decode("utf-8", "replace")


def finished_bar(label: str, shown: str) -> int:
    """The total of the bar `label` drawn to its end (`label [#...] N/N`); fails if none was."""
    found = re.findall(rf"{re.escape(label)} \[#+ *\] (\d+)/(\d+)", shown)
    done = [int(total) for count, total in found if count == total]
    assert done, f"no finished {label!r} bar in {shown!r}"
    return done[-1]


@pytest.fixture
def notes(project: Path, cli) -> Path:
    for title in ("Sessions expire after an hour", "Login retries back off"):
        assert cli("remember", "-t", "concept", "--title", title, "-m", "x").code == 0
    return project


def test_reindex_draws_a_bar_for_the_notes_and_one_for_the_code(notes):
    code, out, shown = on_a_terminal("reindex", cwd=notes)
    assert code == 0, shown
    assert finished_bar("indexing notes", shown) == 2
    assert finished_bar("indexing code", shown) >= 1
    assert "rebuilt the index" in out


def test_reindex_draws_nothing_with_json_or_into_a_pipe(notes):
    code, out, shown = on_a_terminal("reindex", "--json", cwd=notes)
    assert code == 0 and json.loads(out)["indexed"] == 2
    assert "[" not in shown and "indexing" not in shown
    piped = run_cli_process("reindex", cwd=notes)
    assert piped.returncode == 0 and piped.stderr == ""


def test_xray_draws_a_bar_while_it_reads_the_transcripts(tmp_path, isolated_home):
    generate(isolated_home / ".claude", sessions=3, calls_per_session=5, seed=1)
    files = len(list((isolated_home / ".claude" / "projects").rglob("*.jsonl")))
    code, out, shown = on_a_terminal("xray", cwd=tmp_path)
    assert code == 0, shown
    assert finished_bar("reading transcripts", shown) == files
    code, out, shown = on_a_terminal("xray", "--json", cwd=tmp_path)
    assert code == 0 and json.loads(out) and shown == ""
    piped = run_cli_process("xray", cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == ""


def test_eval_draws_a_bar_per_configuration_scored(notes, tmp_path):
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text('{"query": "when do sessions expire", "gold": '
                       '["concept-sessions-expire-after-an-hour"]}\n'
                       '{"query": "login retries", "gold": ["concept-login-retries-back-off"]}\n',
                       encoding="utf-8")
    code, out, shown = on_a_terminal("eval", str(dataset), "--compare", "ppr=0", cwd=notes)
    assert code == 0, shown
    assert finished_bar("scoring", shown) == 2
    assert finished_bar("scoring --compare", shown) == 2
    code, out, shown = on_a_terminal("eval", str(dataset), "--json", cwd=notes)
    assert code == 0 and json.loads(out) and "scoring" not in shown
    piped = run_cli_process("eval", str(dataset), cwd=notes)
    assert piped.returncode == 0 and piped.stderr == ""


def test_sync_draws_bars_for_checking_and_pushing(notes, pg_url):
    import psycopg

    from loremap.store.postgres import schema

    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        schema.migrate(conn)
    shared = {"LOREMAP_DATABASE_URL": pg_url, "LOREMAP_PROJECT_KEY": "team/app"}
    code, out, shown = on_a_terminal("sync", "push", "--dry-run", "--json", cwd=notes,
                                     env=shared)
    assert code == 0, shown
    assert "checking" not in shown and json.loads(out)["dry_run"] is True
    code, out, shown = on_a_terminal("sync", "push", cwd=notes, env=shared)
    assert code == 0, shown
    assert finished_bar("checking notes", shown) == 2
    assert finished_bar("pushing", shown) == 2
    piped = run_cli_process("sync", "pull", cwd=notes, env=shared)
    assert piped.returncode == 0 and piped.stderr == ""


# --- the callbacks, driven directly -----------------------------------------------------------


def test_tty_progress_draws_nothing_when_stderr_is_not_a_terminal(capsys):
    from loremap.codemap.index import tty_progress

    assert tty_progress("anything") is None
    assert capsys.readouterr().err == ""


def test_the_transcript_reader_reports_each_file_read(isolated_home):
    from loremap.xray.transcripts import read_all

    root = isolated_home / ".claude"
    generate(root, sessions=2, calls_per_session=3, seed=2)
    seen: list[tuple[int, int]] = []
    chains = list(read_all(root / "projects", progress=lambda d, t: seen.append((d, t))))
    assert seen == [(n, len(chains)) for n in range(1, len(chains) + 1)]


def test_scoring_reports_each_case_ranked():
    from loremap.search.evaluate import Case, score

    cases = [Case(f"q{n}", (), ("a",), n) for n in range(3)]
    seen: list[tuple[int, int]] = []
    score(cases, lambda case: ["a"], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_rebuilding_the_notes_reports_each_note_indexed(notes):
    from loremap.app import App

    seen: list[tuple[int, int]] = []
    with App.open(cwd=notes, fresh_index=True) as app:
        app.memory.rebuild(lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
