"""A cloned repository is untrusted: symlinks under `.loremap/` (and in the code) never lead
loremap out of the repository. Reads skip such a link with a line naming it, writes refuse with
one line and change nothing, and `doctor` names each link with its target. Driven through the
CLI, the MCP server's in-memory client and the hooks as Claude Code runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from conftest import git
from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from loremap.vault import fs
from test_mcp import text

MARKER = "zebracorn"  # a word found nowhere else: wherever it shows, the outside file leaked
NOTE_ID = "gotcha-tokens-expire-fast"
NOTE = f"""---
id: {NOTE_ID}
type: gotcha
title: Tokens expire fast
created_at: 2026-11-30T10:00:00Z
---
The {MARKER} token from the outside file.
"""


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the repository: what a hostile link points at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def link_note(project: Path, outside: Path) -> Path:
    """`.loremap/notes/<id>.md` as a symlink to a well-formed note outside the repository."""
    target = outside / f"{NOTE_ID}.md"
    target.write_text(NOTE, encoding="utf-8")
    notes = project / ".loremap" / "notes"
    notes.mkdir(exist_ok=True)
    (notes / f"{NOTE_ID}.md").symlink_to(target)
    return target


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def hook(event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loremap.hook", event],
                          input=json.dumps(payload), capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def hook_log(home: Path) -> str:
    path = home / "loremap" / "logs" / "hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def payload(project: Path, event: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "sess-1", "transcript_path": str(project / "t.jsonl"),
            "cwd": str(project), "hook_event_name": event, **extra}


def mcp_read(project: Path, target: str) -> types.CallToolResult:
    out: list[types.CallToolResult] = []

    async def main() -> None:
        async with Client(build_server(Projects(project), "lean")) as c:
            out.append(await c.call_tool("read", {"target": target}))

    anyio.run(main)
    return out[0]


# --- notes -------------------------------------------------------------------------------------


def test_a_note_linked_out_of_the_repository_is_skipped_with_a_line_and_never_shown(
        project, cli, outside):
    link_note(project, outside)
    reindex = cli("reindex")
    assert reindex.code == 0
    skipped = [line for line in reindex.err.splitlines() if NOTE_ID in line]
    assert len(skipped) == 1 and "symlink" in skipped[0] and str(outside) in skipped[0]
    search = cli("search", MARKER)
    assert MARKER not in search.out
    show = cli("show", NOTE_ID)
    assert show.code == 1 and MARKER not in show.out + show.err
    assert "symlink" in show.err and len(show.err.strip().splitlines()) == 1
    assert NOTE_ID not in cli("list").out


def test_the_mcp_read_tool_does_not_return_a_linked_note(project, cli, outside):
    link_note(project, outside)
    result = mcp_read(project, NOTE_ID)
    assert result.is_error and MARKER not in text(result)
    assert "symlink" in text(result)


def test_a_write_over_a_linked_note_refuses_and_leaves_its_target_alone(project, outside):
    from loremap.app import App
    from loremap.errors import UnsafePath

    target = link_note(project, outside)
    with App.open(project) as app:
        vault = app.memory.project
        assert vault is not None
        with pytest.raises(UnsafePath, match="symlink"):
            vault.writable(NOTE_ID)
    assert target.read_text(encoding="utf-8") == NOTE
    assert (project / ".loremap" / "notes" / f"{NOTE_ID}.md").is_symlink()


def test_a_notes_folder_linked_out_refuses_writes_and_reads_and_writes_nothing_there(
        project, cli, outside):
    notes = project / ".loremap" / "notes"
    notes.rmdir()
    (outside / f"{NOTE_ID}.md").write_text(NOTE, encoding="utf-8")
    notes.symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    remember = cli("remember", "-t", "gotcha", "--title", "Caches expire hourly", "-m",
                   "The cache lives an hour.")
    assert remember.code == 1 and "symlink" in remember.err
    assert len(remember.err.strip().splitlines()) == 1
    search = cli("search", MARKER)
    assert search.code == 1 and MARKER not in search.out
    assert snapshot(outside) == before


def test_a_personal_notes_folder_linked_out_of_the_personal_vault_refuses_a_write(
        project, cli, outside, isolated_home):
    personal = isolated_home / "loremap" / "personal"
    personal.mkdir(parents=True)
    (personal / "notes").symlink_to(outside, target_is_directory=True)
    result = cli("remember", "--personal", "-t", "preference", "--title", "Tabs over spaces",
                 "-m", "Always tabs.")
    assert result.code == 1 and "symlink" in result.err
    assert snapshot(outside) == {}


def test_an_index_or_lock_file_linked_elsewhere_is_refused_before_it_is_opened(
        project, cli, outside):
    for name in ("index.sqlite", ".lock"):
        target = outside / name
        target.write_bytes(b"")
        path = project / ".loremap" / name
        path.unlink(missing_ok=True)
        path.symlink_to(target)
        result = cli("remember", "-t", "gotcha", "--title", "Caches expire hourly", "-m",
                     "The cache lives an hour.")
        assert result.code == 1 and f"{name} is a symlink" in result.err
        assert target.read_bytes() == b""
        path.unlink()


def test_a_planted_temp_file_link_is_replaced_not_written_through(tmp_path, outside):
    target = outside / "victim"
    target.write_text("keep me", encoding="utf-8")
    path = tmp_path / "note.md"
    fs.temp_path_for(path).symlink_to(target)
    fs.atomic_write(path, b"new")
    assert path.read_bytes() == b"new" and target.read_text(encoding="utf-8") == "keep me"


# --- handoffs ------------------------------------------------------------------------------


def test_handoff_save_through_a_handoffs_link_writes_nothing_outside(project, cli, outside):
    handoffs = project / ".loremap" / "handoffs"
    handoffs.rmdir()
    handoffs.symlink_to(outside, target_is_directory=True)
    result = cli("handoff", "save", "--goal", "Finish the token refresh")
    assert result.code == 1 and "symlink" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert snapshot(outside) == {}


def test_a_handoff_file_linked_out_is_listed_as_skipped_and_never_served(project, cli, outside):
    target = outside / "2026-11-30T21-40-05Z.md"
    target.write_text("---\ntype: handoff\nstatus: open\n---\n# Handoff: x\n\n## Goal\n"
                      f"Leak the {MARKER}\n", encoding="utf-8")
    (project / ".loremap" / "handoffs" / target.name).symlink_to(target)
    listed = cli("handoff", "list")
    assert MARKER not in listed.out + listed.err
    assert "skipped" in listed.err and "symlink" in listed.err
    shown = cli("handoff", "show")
    assert shown.code == 1 and MARKER not in shown.out


# --- sessions (the hooks' state) -------------------------------------------------------------


def test_the_hooks_write_no_session_file_through_a_sessions_link(project, cli, outside,
                                                                  isolated_home):
    (project / ".loremap" / "sessions").symlink_to(outside, target_is_directory=True)
    (project / "t.jsonl").write_text("", encoding="utf-8")
    result = hook("pre-compact", payload(project, "PreCompact", trigger="auto"))
    assert (result.returncode, result.stdout) == (0, "")
    assert snapshot(outside) == {}
    assert "symlink" in hook_log(isolated_home)


def test_a_linked_session_record_is_not_injected_after_compaction(project, cli, outside,
                                                                   isolated_home):
    sessions = project / ".loremap" / "sessions"
    sessions.mkdir()
    target = outside / "record.md"
    target.write_text(f"# Session record sess-1\nThe {MARKER} record.\n", encoding="utf-8")
    (sessions / "sess-1.record.md").symlink_to(target)
    result = hook("session-start", payload(project, "SessionStart", source="compact"))
    assert result.returncode == 0 and MARKER not in result.stdout
    log = hook_log(isolated_home)
    assert "sess-1.record.md" in log and "symlink" in log


# --- map pages ---------------------------------------------------------------------------------


def test_a_linked_map_page_is_neither_shown_nor_written_through(project, cli, outside):
    assert cli("index").code == 0
    target = outside / "map.md"
    target.write_text(f"# Map of {MARKER}\n", encoding="utf-8")
    map_md = project / ".loremap" / "map.md"
    map_md.unlink()
    map_md.symlink_to(target)
    result = cli("map")
    assert MARKER not in result.out
    assert result.code == 1 and "symlink" in result.err
    assert target.read_text(encoding="utf-8") == f"# Map of {MARKER}\n"
    start = hook("session-start", payload(project, "SessionStart", source="startup"))
    assert start.returncode == 0 and MARKER not in start.stdout


def test_no_stale_page_is_deleted_through_a_modules_link(project, cli, outside):
    (outside / "precious.md").write_text("mine\n", encoding="utf-8")
    shutil.rmtree(project / ".loremap" / "modules", ignore_errors=True)
    (project / ".loremap" / "modules").symlink_to(outside, target_is_directory=True)
    (project / "src" / "auth" / "tokens.py").write_text("def mint():\n    pass\n",
                                                      encoding="utf-8")
    result = cli("index")
    assert result.code == 1 and "symlink" in result.err
    assert snapshot(outside) == {"precious.md": b"mine\n"}


# --- code ----------------------------------------------------------------------------------


def test_a_code_file_linked_out_of_the_repository_is_never_indexed_or_read(project, cli,
                                                                            outside):
    secret = outside / "secret.py"
    secret.write_text(f"def {MARKER}():\n    return 'outside'\n", encoding="utf-8")
    (project / "src" / "leak.py").symlink_to(secret)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a link")
    assert cli("index").code == 0
    assert MARKER not in cli("search", MARKER).out
    assert MARKER not in cli("show", "src/leak.py").out
    result = mcp_read(project, "src/leak.py")
    assert MARKER not in text(result)


# --- doctor ----------------------------------------------------------------------------------


def test_doctor_names_each_link_and_its_target_and_fix_leaves_them(project, cli, outside):
    link_note(project, outside)
    (project / ".loremap" / "handoffs").rmdir()
    (project / ".loremap" / "handoffs").symlink_to(outside, target_is_directory=True)
    for args in (("doctor",), ("doctor", "--fix")):
        result = cli(*args)
        assert result.code == 1
        found = [line for line in result.out.splitlines() if "symlink to" in line]
        assert any(f".loremap/notes/{NOTE_ID}.md is a symlink to {outside}" in line
                   for line in found), result.out
        assert any(f".loremap/handoffs is a symlink to {outside}" in line for line in found)
    assert (project / ".loremap" / "notes" / f"{NOTE_ID}.md").is_symlink()


def test_doctor_reports_a_notes_folder_linked_out_instead_of_failing(project, cli, outside):
    notes = project / ".loremap" / "notes"
    notes.rmdir()
    notes.symlink_to(outside, target_is_directory=True)
    result = cli("doctor")
    assert result.code == 1
    assert f".loremap/notes is a symlink to {outside}" in result.out
