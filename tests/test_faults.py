"""Faults of the machine met as a user would (found by bench/soak.py): an index whose pages
were overwritten while it was in use, and a full disk. Each is one line and exit 1, never an
internal error; a damaged index is set aside and rebuilt from the notes, losing nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli_process


def damage(index: Path, table: str = "nodes") -> None:
    """Overwrite the root page of `table`, as a stray write would: the index opens (its schema
    and meta pages are sound) and the first read of that table fails."""
    with sqlite3.connect(index) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                             (table,)).fetchone()
    with index.open("r+b") as fh:
        fh.seek((root - 1) * page)
        fh.write(b"\xa5" * page)


@pytest.fixture
def noted(project: Path) -> Path:
    for n in range(3):
        done = run_cli_process("remember", "-t", "bug", "--title", f"Ledger bug {n}", "-m",
                               f"The ledger lock is taken twice in case {n}.", cwd=project)
        assert done.returncode == 0, done.stderr
    run_cli_process("index", cwd=project)
    return project


def ids(project: Path) -> set[str]:
    done = run_cli_process("list", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return {n["id"] for n in json.loads(done.stdout)["notes"]}


def test_a_damaged_index_is_one_line_then_rebuilt_from_the_notes(noted):
    before = ids(noted)
    index = noted / ".loremap" / "index.sqlite"
    damage(index)
    done = run_cli_process("search", "ledger", "lock", cwd=noted)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("loremap: error: the index was damaged (database disk image is "
                           "malformed): it was set aside as index.sqlite.corrupt-")
    assert list(index.parent.glob("index.sqlite.corrupt-*"))
    # The next command builds a new index from the notes: every note is there again.
    assert ids(noted) == before
    assert run_cli_process("doctor", cwd=noted).returncode == 0


def test_doctor_finds_a_damaged_index_and_fix_sets_it_aside(noted):
    """Damage where no command looks first (the code map's symbols): doctor's check reads every
    page."""
    before = ids(noted)
    damage(noted / ".loremap" / "index.sqlite", "symbols")
    found = run_cli_process("doctor", "--json", cwd=noted)
    report = json.loads(found.stdout)
    assert found.returncode == 1 and not report["ok"]
    (finding,) = [f for f in report["findings"] if f["check"] == "index-file"]
    assert finding["level"] == "error" and "damaged" in finding["message"]
    fixed = run_cli_process("doctor", "--fix", cwd=noted)
    assert fixed.returncode == 0, fixed.stdout
    assert "index-file: the index file is damaged" in fixed.stdout and "(fixed)" in fixed.stdout
    again = json.loads(run_cli_process("doctor", "--json", cwd=noted).stdout)
    assert again["ok"], [f for f in again["findings"] if f["level"] != "ok"]
    assert ids(noted) == before


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 3 MiB tmpfs (root only, as the soak's)."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_is_one_line_and_exit_1(small_disk, cli):
    from conftest import git

    root = small_disk / "repo"
    root.mkdir()
    git(small_disk, "init", "-q", str(root))
    assert run_cli_process("init", cwd=root).returncode == 0
    (small_disk / "filler").write_bytes(b"")
    with (small_disk / "filler").open("ab") as fh:  # the disk, nearly full
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    os.truncate(small_disk / "filler", max(0, (small_disk / "filler").stat().st_size - 8192))
    refused = None
    for n in range(20):
        done = run_cli_process("remember", "-t", "concept", "--title", f"Large note {n}", "-m",
                               "x" * 40_000, cwd=root)
        if done.returncode != 0:
            refused = done
            break
    assert refused is not None, "the disk never filled"
    assert refused.returncode == 1, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("loremap: error: ") and "no space left" in line.lower(), line
    (small_disk / "filler").unlink()
    # With room again, the project works and doctor repairs whatever the fault left.
    assert run_cli_process("doctor", "--fix", cwd=root).returncode == 0
    assert run_cli_process("doctor", cwd=root).returncode == 0


def test_a_row_whose_text_was_overwritten_is_damage_too(noted):
    """Bytes overwritten inside a sound page: SQLite returns the row, Python cannot decode it
    (the soak's corrupted index met it in `loremap index`)."""
    index = noted / ".loremap" / "index.sqlite"
    with sqlite3.connect(index) as db:
        db.execute("UPDATE files SET content_hash = CAST(X'FFFE41' AS TEXT)")
    done = run_cli_process("index", cwd=noted)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("loremap: error: the index was damaged (Could not decode to UTF-8")
    assert run_cli_process("index", cwd=noted).returncode == 0
    assert run_cli_process("doctor", cwd=noted).returncode == 0


def test_the_mcp_server_and_the_hooks_say_so_and_set_it_aside_too(noted, monkeypatch):
    """The same fault through the agents' doors: a tool error of one line (then the next call
    answers from the rebuilt index), and a hook that fails open and leaves a new index."""
    import sys

    # The SDK hands the server its stderr (bound when it is first imported): a real file.
    devnull = open(os.devnull, "w")  # noqa: SIM115 - closed at the end of the test
    monkeypatch.setattr(sys, "stderr", devnull)
    import anyio
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    index = noted / ".loremap" / "index.sqlite"
    params = StdioServerParameters(command=sys.executable, args=["-m", "loremap", "serve"],
                                   cwd=str(noted), env=dict(os.environ))

    async def session() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with Client(params) as client:
            await client.call_tool("recall", {"query": "ledger lock"})  # the App is open
            damage(index)
            first = await client.call_tool("recall", {"query": "ledger lock"})
            second = await client.call_tool("recall", {"query": "ledger lock"})
            return first, second

    first, second = anyio.run(session)
    text = first.content[0]
    assert first.is_error and isinstance(text, types.TextContent)
    assert text.text.startswith("the index was damaged (database disk image is malformed)")
    assert "\n" not in text.text.strip()
    answer = second.content[0]
    assert not second.is_error and isinstance(answer, types.TextContent)
    assert "Ledger bug" in answer.text

    damage(index)
    payload = json.dumps({"session_id": "s", "cwd": str(noted), "prompt": "ledger lock bug",
                          "hook_event_name": "UserPromptSubmit"})
    hook = subprocess.run([sys.executable, "-m", "loremap.hook", "UserPromptSubmit"],
                          input=payload, capture_output=True, text=True, cwd=noted, timeout=120)
    assert hook.returncode == 0  # fails open
    assert len(list(index.parent.glob("index.sqlite.corrupt-*"))) == 2
    assert "Ledger bug" in run_cli_process("search", "ledger", "lock", cwd=noted).stdout
    devnull.close()


def test_outside_a_project_the_personal_index_is_the_one_set_aside(tmp_path, isolated_home):
    """The damaged file is found by SQLite's check, not guessed from where the command ran:
    outside a project the personal notes' own index is the one set aside."""
    where = tmp_path / "elsewhere"
    where.mkdir()
    done = run_cli_process("remember", "--personal", "-t", "preference", "--title",
                           "Short answers", "-m", "Answer in one paragraph.", cwd=where)
    assert done.returncode == 0, done.stderr
    assert run_cli_process("list", cwd=where).returncode == 0
    index = isolated_home / "loremap" / "cache" / "personal-index.sqlite"
    assert index.is_file()
    damage(index)
    failed = run_cli_process("list", cwd=where)
    assert failed.returncode == 1, failed.stderr
    assert "it was set aside as personal-index.sqlite.corrupt-" in failed.stderr
    assert "Short answers" in run_cli_process("list", cwd=where).stdout
