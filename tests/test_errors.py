"""Errors and their remedies: an error's signature, `error` notes that record one (with the
note that fixed it and the command that failed), the hooks that say so when the same error or
command comes back, and `loremap errors`. Hook payloads are in the shape Claude Code 2.1.328
sends (`PostToolUseFailure` with `error` "Exit code N\\n<output>", captured from the real
binary in tests/test_claude_e2e.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from loremap.sessions.failures import MAX_LOG_BYTES, read_log, record
from loremap.text.signature import command_key, signature
from loremap.vault.frontmatter import parse_note
from test_hook_events import base, context_of, hook

MISSING = ("Traceback (most recent call last):\n  File \"/home/ann/app/main.py\", line 3, in "
           "<module>\n    import requests\nModuleNotFoundError: No module named 'requests'")


@pytest.mark.parametrize(("text", "expected"), [
    ("Exit code 2\nls: cannot access '/tmp/x-91/out': No such file or directory",
     "ls: cannot access <path>: no such file or directory"),
    (MISSING, "modulenotfounderror: no module named 'requests'"),
    ("Exit code 1\nnpm ERR! code ENOENT\nnpm ERR! path /home/me/app/package.json",
     "npm err! code enoent"),
    ("error: failed to push some refs to 'https://github.com/acme/app.git'",
     "error: failed to push some refs to '<url>'"),
    ("FAILED tests/test_cart.py::test_total - AssertionError: assert 41 == 42",
     "failed <path>::test_total - assertionerror: assert <n> == <n>"),
    ("KeyError: 0x7f3a2b1c at 2026-12-03T09:12:00Z for 3f2a9c1e-1111-2222-3333-444455556666",
     "keyerror: <id> at <time> for <id>"),
    ("Exit code 3\n", ""),
    ("", ""),
])
def test_a_signature_keeps_what_went_wrong_and_drops_what_varies(text, expected):
    assert signature(text) == expected
    assert signature(expected) == expected  # a signature is its own signature
    assert len(signature(text * 50)) <= 160


def test_the_same_failure_elsewhere_has_the_same_signature():
    a = signature("Exit code 2\nls: cannot access '/home/ann/build/out': No such file")
    b = signature("Exit code 2\nls: cannot access 'C:\\build\\out': No such file")
    assert a == b
    assert signature(MISSING) != signature(MISSING.replace("requests", "numpy"))
    assert command_key("pytest   tests/a.py\n") == "pytest tests/a.py" != command_key("pytest")


@pytest.fixture
def recorded(project: Path, cli: Any) -> Path:
    assert cli("remember", "-t", "procedure", "--title", "Install the dev dependencies", "-m",
               "pip install -e '.[test]' in the project's venv.").code == 0
    done = cli("remember", "-t", "error", "--title", "requests is missing in a fresh venv",
               "-m", "main.py imports requests; a fresh venv lacks it.", "--error", MISSING,
               "--remedy", "procedure-install-the-dev-dependencies", "--command",
               "python main.py")
    assert done.code == 0 and done.err == "", done.err
    return project


def failure(project: Path, error: str, command: str = "python main.py", session: str = "s1",
            **extra: Any) -> dict[str, Any]:
    return base(project, "PostToolUseFailure", session, tool_name="Bash",
                tool_input={"command": command, "description": "run"},
                tool_use_id="toolu_1", error=error, is_interrupt=False, duration_ms=30, **extra)


def test_an_error_note_keeps_the_signature_remedy_and_command(recorded):
    path = recorded / ".loremap" / "notes" / "error-requests-is-missing-in-a-fresh-venv.md"
    note = parse_note(path.read_text(encoding="utf-8"), "n.md")
    assert (note.signature, note.remedy, note.command) == (
        "modulenotfounderror: no module named 'requests'",
        "procedure-install-the-dev-dependencies", "python main.py")


def test_bad_error_notes_are_refused_in_one_line_and_write_nothing(project, cli):
    folder = project / ".loremap" / "notes"
    before = sorted(p.name for p in folder.iterdir())
    cases = [
        (("-t", "gotcha", "--error", "KeyError: 1"), "--error: only an error note records"),
        (("-t", "bug", "--remedy", "procedure-x"), "--remedy: only an error note records"),
        (("-t", "error", "--error", "  \n "), "--error holds nothing to recognise"),
        (("-t", "error", "--error", "x" * 20_001), "--error is 20,001 characters"),
        (("-t", "error", "--error", "KeyError: 1", "--remedy", "../etc"),
         "--remedy: invalid note id"),
        (("-t", "error", "--error", "KeyError: 1", "--command", "  "), "--command is empty"),
    ]
    for args, message in cases:
        done = cli("remember", "--title", "Bad", "-m", "body", *args)
        assert done.code == 1 and message in done.err and done.err.count("\n") == 1, \
            (args, done.err)
    assert sorted(p.name for p in folder.iterdir()) == before
    done = cli("remember", "-t", "error", "--title", "Dangling", "-m", "b", "--error",
               "KeyError: 1", "--remedy", "procedure-not-written-yet")
    assert done.code == 0
    assert "remedy procedure-not-written-yet: no such note yet" in done.err


def test_the_remedy_comes_with_a_recorded_error_once_per_session(recorded, isolated_home):
    error = "Exit code 1\n" + MISSING.replace("/home/ann/app", str(recorded))
    first = context_of(hook("tool-failure", failure(recorded, error)), "PostToolUseFailure")
    assert "`modulenotfounderror: no module named 'requests'`" in first
    assert "[error] requests is missing in a fresh venv" in first
    assert "fixed by [Install the dev dependencies] (procedure-install-the-dev-dependencies)" \
        in first
    again = hook("tool-failure", failure(recorded, error))
    assert again.returncode == 0 and again.stdout == ""  # said once in the session
    other = hook("PostToolUseFailure", failure(recorded, error, session="s2"))
    assert "in the project's memory (3 times in this clone so far)" in context_of(
        other, "PostToolUseFailure")


def test_an_unrelated_error_brings_nothing_until_it_comes_back(recorded):
    error = "Exit code 2\nls: cannot access 'dist': No such file or directory"
    once = hook("tool-failure", failure(recorded, error, command="ls dist"))
    assert once.returncode == 0 and once.stdout == ""
    twice = context_of(hook("tool-failure", failure(recorded, error, command="ls dist",
                                                    session="s9")), "PostToolUseFailure")
    assert "happened 2 times in this clone with no remedy recorded" in twice
    assert "requests" not in twice  # never another error's remedy


def gemini_call(project: Path, command: str, output: str, code: int | None,
                session: str = "g1") -> dict[str, Any]:
    """Gemini CLI 0.61's AfterTool after `run_shell_command`: the tool's llmContent as its
    shell tool writes it (`Output:`, then `Exit Code:` only when non-zero), wrapped as
    untrusted."""
    parts = [f"Output: {output or '(empty)'}"] + ([f"Exit Code: {code}"] if code else [])
    content = "<untrusted_context>\n" + "\n".join(parts) + "\n</untrusted_context>"
    return {"session_id": session, "transcript_path": str(project / "g.json"),
            "cwd": str(project), "hook_event_name": "AfterTool",
            "timestamp": "2026-12-04T02:00:00.000Z", "tool_name": "run_shell_command",
            "tool_input": {"command": command, "description": "run"},
            "tool_response": {"llmContent": content, "returnDisplay": output}}


def test_a_failed_gemini_shell_command_brings_its_remedy(recorded):
    output = MISSING.replace("/home/ann/app", str(recorded))
    done = hook("AfterTool", gemini_call(recorded, "python main.py", output, 1))
    text = context_of(done, "PostToolUseFailure")
    assert "[error] requests is missing in a fresh venv" in text
    assert "fixed by [Install the dev dependencies]" in text
    log = (recorded / ".loremap" / "cache" / "errors.jsonl").read_text(encoding="utf-8")
    assert '"tool": "run_shell_command"' in log and '"command": "python main.py"' in log
    for quiet in (gemini_call(recorded, "python main.py", "ok", None, session="g2"),
                  gemini_call(recorded, "python main.py", output, 0, session="g3")):
        ran = hook("AfterTool", quiet)  # a command that worked: the meter's, which is quiet
        assert (ran.returncode, ran.stdout) == (0, "")
    not_run = {**gemini_call(recorded, "cat x", "", None, session="g4"), "tool_name":
                 "read_file", "tool_response": {"llmContent": "", "returnDisplay": "",
                                                "error": {"message": output,
                                                          "type": "file_not_found"}}}
    assert "requests is missing" in context_of(hook("AfterTool", not_run),
                                               "PostToolUseFailure")


def test_an_interrupt_or_a_payload_without_an_error_is_not_a_failure(recorded):
    for payload in ({**failure(recorded, MISSING), "is_interrupt": True},
                    {**failure(recorded, MISSING), "error": None},
                    {**failure(recorded, MISSING), "error": "Exit code 1\n"}):
        done = hook("tool-failure", payload)
        assert done.returncode == 0 and done.stdout == "", payload
    assert read_log(recorded / ".loremap") == []


def test_a_command_recorded_as_failed_is_named_before_it_runs_again(recorded):
    payload = base(recorded, "PreToolUse", tool_name="Bash",
                   tool_input={"command": "python   main.py"}, tool_use_id="toolu_2")
    text = context_of(hook("pre-tool", payload), "PreToolUse")
    assert "This command failed before in this project" in text
    assert "fixed by [Install the dev dependencies]" in text
    other = hook("pre-tool", {**payload, "tool_input": {"command": "python main.py --dry"}})
    assert other.returncode == 0 and other.stdout == ""


def test_the_log_is_kept_redacted_and_bounded(recorded):
    folder = recorded / ".loremap"
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    assert record(folder, "keyerror: <n>", "Bash", f"curl -H 'Authorization: {token}' x") == 1
    assert token not in (folder / "cache" / "errors.jsonl").read_text(encoding="utf-8")
    assert record(folder, "keyerror: <n>", "Bash", "y" * 5000) == 2
    assert len(read_log(folder)[-1]["command"]) == 300
    big = json.dumps({"signature": "x", "command": "z" * 900}) + "\n"
    (folder / "cache" / "errors.jsonl").write_text(big * (MAX_LOG_BYTES // len(big) + 2),
                                                    encoding="utf-8")
    record(folder, "keyerror: <n>", "Bash", "")
    size = (folder / "cache" / "errors.jsonl").stat().st_size
    assert size < MAX_LOG_BYTES * 0.6 and read_log(folder)[-1]["signature"] == "keyerror: <n>"


def test_loremap_errors_lists_each_signature_with_its_count_and_remedy(recorded, cli):
    error = "Exit code 1\n" + MISSING
    for session in ("s1", "s2"):
        hook("tool-failure", failure(recorded, error, session=session))
    hook("tool-failure", failure(recorded, "Exit code 2\nls: cannot access 'dist': No such "
                                 "file or directory", command="ls dist"))
    listed = json.loads(cli("errors", "--json").out)["errors"]
    assert [(e["signature"], e["count"], e["command"]) for e in listed] == [
        ("modulenotfounderror: no module named 'requests'", 2, "python main.py"),
        ("ls: cannot access 'dist': no such file or directory", 1, "ls dist")]
    assert listed[0]["notes"] == [{
        "id": "error-requests-is-missing-in-a-fresh-venv",
        "title": "requests is missing in a fresh venv",
        "remedy": "procedure-install-the-dev-dependencies",
        "remedy_title": "Install the dev dependencies"}]
    text = cli("errors").out
    assert "2×  modulenotfounderror: no module named 'requests'" in text
    assert "fixed by procedure-install-the-dev-dependencies (Install the dev dependencies)" \
        in text
    assert "no error note: `loremap remember -t error --error TEXT --remedy ID`" in text


def test_an_agent_records_an_error_and_its_remedy_through_the_mcp_server(project, cli):
    # (The SDK is imported with the module, not here: its stdio client binds sys.stderr as
    # its default error log when first imported, and here that is pytest's capture.)
    out: list[str] = []

    async def main() -> None:
        async with Client(build_server(Projects(project), "lean")) as c:
            done = await c.call_tool("remember", {"facts": [
                {"type": "procedure", "title": "Start the database first",
                 "body": "Run `loremap db local start` before the tests."},
                {"type": "error", "title": "The tests cannot reach the database",
                 "body": "psycopg refuses the connection when no server runs.",
                 "error": "psycopg.OperationalError: connection to server at \"127.0.0.1\", "
                          "port 5432 failed: Connection refused",
                 "remedy": "procedure-start-the-database-first"}]})
            bad = await c.call_tool("remember", {"facts": [
                {"type": "gotcha", "title": "x", "body": "y", "error": "KeyError: 1"}]})
            out.extend([done.content[0].text, bad.content[0].text, str(bad.is_error)])

    anyio.run(main)
    assert "created error-the-tests-cannot-reach-the-database" in out[0]
    assert "facts[0].error: only an error note records" in out[1] and out[2] == "True"
    payload = failure(project, "Exit code 1\npsycopg.OperationalError: connection to server at "
                      "\"10.0.0.5\", port 6543 failed: Connection refused", command="pytest")
    text = context_of(hook("tool-failure", payload), "PostToolUseFailure")
    assert "fixed by [Start the database first]" in text


def test_a_signature_is_counted_by_its_own_key_only(recorded):
    folder = recorded / ".loremap"
    key = 'nameerror: name "x" is not defined'
    # A command that spells the key and the log's own keys is a value: it counts nothing.
    trap = f'echo \'"signature": {json.dumps(key)}, "tool": \''
    assert record(folder, "keyerror: <n>", "Bash", trap) == 1
    assert record(folder, key, "Bash", "python x.py") == 1
    assert record(folder, key, "Bash", trap) == 2
    assert record(folder, "keyerror: <n>", "Bash", "") == 2
    counts = {}
    for entry in read_log(folder):
        counts[entry["signature"]] = counts.get(entry["signature"], 0) + 1
    assert counts == {"keyerror: <n>": 2, key: 2}
