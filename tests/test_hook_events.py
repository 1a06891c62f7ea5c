"""What each hook event does, run as Claude Code runs it: `loremap-hook <event>` in a
subprocess, the event JSON on stdin (shapes from the recorded 2.1.328 payloads), a real
project, and transcripts written in Claude Code's record format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).with_name("fixtures") / "claude_code"
NOTE_TITLE = "Login tokens expire after five minutes"


def hook(event: str, payload: dict[str, Any], env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loremap.hook", event],
                          input=json.dumps(payload), capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def context_of(result: subprocess.CompletedProcess[str], event_name: str) -> str:
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == event_name
    text: str = data["hookSpecificOutput"]["additionalContext"]
    assert text.startswith('<project-memory from="loremap"')
    assert text.endswith("</project-memory>")
    assert len(text) < 10_000  # Claude Code spills longer hook output to a file
    return text


def hook_log(home: Path) -> list[str]:
    path = home / "loremap" / "logs" / "hook.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def noted(project: Path, cli: Any) -> Path:
    (project / "src" / "auth" / "session.py").write_text(
        "def refresh(token):\n    return token\n", encoding="utf-8")
    assert cli("remember", "-t", "gotcha", "--title", NOTE_TITLE, "-m",
               "The token login() returns expires after 5 minutes; refresh before long jobs.",
               "-f", "src/auth/login.ts").code == 0
    assert cli("index").code == 0
    return project


def base(project: Path, event: str, session: str = "sess-1", **extra: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": str(project / "t.jsonl"),
            "cwd": str(project), "hook_event_name": event, **extra}


class Transcript:
    """A session transcript in Claude Code's format: one JSON record a line, appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0

    def write(self, record: dict[str, Any]) -> None:
        self.n += 1
        record = {"uuid": f"u{self.n}", "sessionId": "sess-1", "isSidechain": False,
                  "timestamp": "2026-11-30T10:00:00.000Z", **record}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")

    def prompt(self, text: str) -> None:
        self.write({"type": "user", "message": {"role": "user", "content": text}})

    def call(self, context: int, *tools: tuple[str, dict[str, Any]]) -> list[str]:
        """One assistant reply whose request held `context` tokens, calling `tools`."""
        blocks = [{"type": "tool_use", "id": f"toolu_{self.n}_{i}", "name": name, "input": args}
                  for i, (name, args) in enumerate(tools)] or [{"type": "text", "text": "ok"}]
        usage = {"input_tokens": 10, "cache_read_input_tokens": context - 3210,
                 "cache_creation_input_tokens": 3000, "output_tokens": 200}
        self.write({"type": "assistant", "requestId": f"req_{self.n}",
                    "message": {"id": f"msg_{self.n}", "model": "claude-sonnet-4-5",
                                "role": "assistant", "content": blocks, "usage": usage}})
        return [b["id"] for b in blocks if b["type"] == "tool_use"]

    def error(self, tool_use_id: str, text: str) -> None:
        self.write({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "is_error": True,
             "content": f"<tool_use_error>{text}</tool_use_error>"}]}})

    def compact(self) -> None:
        self.write({"type": "system", "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": 170000}})
        self.write({"type": "user", "isCompactSummary": True,
                    "message": {"role": "user", "content": "This session is being continued"}})


# --- session start ----------------------------------------------------------------------


def test_session_start_indexes_and_injects_the_map_and_the_open_handoff(noted, cli):
    assert cli("handoff", "save", "--goal", "Finish the token refresh").code == 0
    (noted / "src" / "auth" / "tokens.py").write_text("def mint():\n    pass\n",
                                                      encoding="utf-8")
    text = context_of(hook("session-start", base(noted, "SessionStart", source="startup")),
                      "SessionStart")
    map_md = (noted / ".loremap" / "map.md").read_text(encoding="utf-8")
    assert "tokens.py" in map_md  # the new file was indexed before the map was read
    assert map_md.strip() in text
    assert "Open handoff" in text and "Finish the token refresh" in text


def test_session_start_outside_a_project_prints_nothing_and_logs_one_line(repo, isolated_home):
    result = hook("session-start", base(repo, "SessionStart", source="startup"))
    assert (result.returncode, result.stdout) == (0, "")
    assert len(hook_log(isolated_home)) == 1


def test_after_compaction_the_handoff_and_the_session_record_come_back(noted, cli):
    assert cli("handoff", "save", "--goal", "Finish the token refresh", "--next",
               "wire refresh() into the client").code == 0
    t = Transcript(noted / "t.jsonl")
    t.prompt("make the token refresh automatic")
    t.call(50_000, ("Read", {"file_path": str(noted / "src" / "auth" / "login.ts")}))
    ids = t.call(60_000, ("Edit", {"file_path": str(noted / "src" / "auth" / "session.py"),
                                   "old_string": "a", "new_string": "b"}),
                 ("Bash", {"command": "pytest -q tests/test_auth.py"}),
                 ("Bash", {"command": "GITHUB_TOKEN=ghp_" + "a1B2" * 9 + " gh api /user"}))
    t.error(ids[1], "Exit code 1: 2 failed")
    assert hook("pre-compact", base(noted, "PreCompact", trigger="auto")).stdout == ""
    t.compact()
    text = context_of(hook("session-start", base(noted, "SessionStart", source="compact")),
                      "SessionStart")
    assert "Finish the token refresh" in text and "wire refresh() into the client" in text
    assert "# Session record sess-1" in text
    assert "make the token refresh automatic" in text
    assert "src/auth/session.py" in text and "pytest -q tests/test_auth.py" in text
    assert "Bash: Exit code 1: 2 failed" in text
    assert "# Map of" in text
    record = next((noted / ".loremap" / "sessions").glob("*.record.md")).read_text("utf-8")
    assert "gh api /user" in record and "ghp_" + "a1B2" * 9 not in record


# --- prompt -------------------------------------------------------------------------------


def test_a_prompt_recalls_the_relevant_note_fenced_as_data(noted):
    text = context_of(hook("prompt", base(noted, "UserPromptSubmit",
                                          prompt="why does the login token expire so fast?")),
                      "UserPromptSubmit")
    assert NOTE_TITLE in text
    assert 'kind="recall"' in text


@pytest.mark.parametrize("prompt", ["yes", "continue", "OK, go on.", "thanks!", "/compact",
                                    "  ", "y"])
def test_trivial_prompts_recall_nothing(noted, prompt):
    result = hook("prompt", base(noted, "UserPromptSubmit", prompt=prompt))
    assert (result.returncode, result.stdout) == (0, "")


def test_a_prompt_with_nothing_relevant_injects_nothing_at_all(noted):
    result = hook("prompt", base(noted, "UserPromptSubmit",
                                 prompt="translate the quarterly marketing brochure into Dutch"))
    assert (result.returncode, result.stdout) == (0, "")


def test_recall_stays_within_the_hook_budget(noted, cli):
    for i in range(30):
        assert cli("remember", "-t", "gotcha", "--title", f"Login token pitfall number {i}",
                   "-m", "login token " * 120).code == 0
    text = context_of(hook("prompt", base(noted, "UserPromptSubmit", prompt="login token"),
                           env={"LOREMAP_HOOK_BUDGET": "400"}), "UserPromptSubmit")
    assert "more over the budget" in text
    assert len(text) < 400 * 4 + 600


# --- pre-tool -----------------------------------------------------------------------------


def read_payload(project: Path, path: str, tool: str = "Read", session: str = "sess-1"
                 ) -> dict[str, Any]:
    return base(project, "PreToolUse", session=session, tool_name=tool,
                tool_input={"file_path": str(project / path)}, tool_use_id="toolu_1")


def test_a_file_s_gotchas_come_before_its_first_read_once_per_session(noted):
    first = context_of(hook("pre-tool", read_payload(noted, "src/auth/login.ts")), "PreToolUse")
    assert NOTE_TITLE in first and "src/auth/login.ts" in first
    again = hook("pre-tool", read_payload(noted, "src/auth/login.ts", tool="Edit"))
    assert (again.returncode, again.stdout) == (0, "")
    other_session = hook("pre-tool", read_payload(noted, "src/auth/login.ts", session="sess-2"))
    assert NOTE_TITLE in context_of(other_session, "PreToolUse")


@pytest.mark.parametrize("tool,path", [("Read", "src/auth/session.py"), ("Bash", "x"),
                                       ("Read", "../outside.py")])
def test_no_file_notes_no_output(noted, tool, path):
    result = hook("pre-tool", read_payload(noted, path, tool=tool))
    assert (result.returncode, result.stdout) == (0, "")


# --- meter and stop -------------------------------------------------------------------------


def test_the_meter_nudges_once_at_80_percent_of_the_compaction_point_and_again_after_one(noted):
    t = Transcript(noted / "t.jsonl")
    t.prompt("refactor the auth module")
    env = {"LOREMAP_COMPACT_AT": "100000"}
    t.call(79_000, ("Read", {"file_path": str(noted / "README.md")}))
    assert hook("post-tool", base(noted, "PostToolUse"), env).stdout == ""
    t.call(81_000, ("Read", {"file_path": str(noted / "README.md")}))
    text = context_of(hook("post-tool", base(noted, "PostToolUse"), env), "PostToolUse")
    assert "81,000 tokens" in text and "100,000" in text and "handoff" in text
    t.call(90_000)
    assert hook("post-tool", base(noted, "PostToolUse"), env).stdout == ""
    hook("pre-compact", base(noted, "PreCompact", trigger="auto"), env)
    t.compact()
    assert hook("post-tool", base(noted, "PostToolUse"), env).stdout == ""  # no usage yet
    t.call(85_000)
    assert "85,000 tokens" in context_of(hook("post-tool", base(noted, "PostToolUse"), env),
                                         "PostToolUse")


def test_the_meter_reads_claude_code_s_own_compaction_window(noted):
    settings = noted / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "autoCompactWindow": 150000\n}\n', encoding="utf-8")
    t = Transcript(noted / "t.jsonl")
    t.call(94_000)  # 80 % of 117k (150k - 33k) is 93.6k
    text = context_of(hook("post-tool", base(noted, "PostToolUse")), "PostToolUse")
    assert "about 117,000" in text


def test_stop_asks_once_after_heavy_exploration_with_nothing_recorded(noted):
    t = Transcript(noted / "t.jsonl")
    t.prompt("how does auth work?")
    for i in range(6):
        t.call(20_000 + i, ("Read", {"file_path": str(noted / f"f{i}.py")}),
               ("Grep", {"pattern": "token"}))
    result = hook("stop", base(noted, "Stop", stop_hook_active=False))
    data = json.loads(result.stdout)
    assert data["decision"] == "block" and "12 reads and searches" in data["reason"]
    assert hook("stop", base(noted, "Stop", stop_hook_active=False)).stdout == ""


def test_stop_stays_quiet_when_the_session_recorded_something(noted):
    t = Transcript(noted / "t.jsonl")
    for i in range(12):
        t.call(20_000 + i, ("Grep", {"pattern": f"p{i}"}))
    t.call(30_000, ("mcp__plugin_loremap_loremap__remember", {"facts": []}))
    assert hook("stop", base(noted, "Stop", stop_hook_active=False)).stdout == ""


def test_stop_never_blocks_a_stop_it_already_blocked(noted):
    t = Transcript(noted / "t.jsonl")
    for i in range(12):
        t.call(20_000 + i, ("Grep", {"pattern": f"p{i}"}))
    assert hook("stop", base(noted, "Stop", stop_hook_active=True)).stdout == ""


# --- bad input: exit 0, no output, one log line ------------------------------------------------


def test_a_half_written_transcript_line_is_skipped(noted):
    t = Transcript(noted / "t.jsonl")
    t.call(90_000)
    with open(t.path, "a", encoding="utf-8") as fh:
        fh.write('{"type":"assistant","message":{"usage":{"input_tok')
    text = context_of(hook("post-tool", base(noted, "PostToolUse"),
                           {"LOREMAP_COMPACT_AT": "100000"}), "PostToolUse")
    assert "90,000 tokens" in text


@pytest.mark.parametrize("event,extra", [
    ("post-tool", {}), ("stop", {"stop_hook_active": False}), ("pre-compact", {"trigger": "auto"}),
])
def test_a_missing_transcript_fails_open(noted, isolated_home, event, extra):
    payload = {**base(noted, "X", **extra), "transcript_path": str(noted / "missing.jsonl")}
    result = hook(event, payload, {"LOREMAP_COMPACT_AT": "100000"})
    assert (result.returncode, result.stdout) == (0, "")
    assert len(hook_log(isolated_home)) == 1


def test_a_corrupt_index_fails_open_with_one_log_line(noted, isolated_home):
    index = noted / ".loremap" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    result = hook("pre-tool", read_payload(noted, "src/auth/login.ts"))
    assert (result.returncode, result.stdout) == (0, "")
    assert len(hook_log(isolated_home)) == 1


def test_a_session_id_that_would_escape_the_folder_is_refused(noted, isolated_home):
    result = hook("pre-tool", read_payload(noted, "src/auth/login.ts", session="../../x"))
    assert (result.returncode, result.stdout) == (0, "")
    assert "bad session id" in hook_log(isolated_home)[0]
    assert not (noted / "x.json").exists()


@pytest.mark.parametrize("text", ['{"autoCompactWindow": 150000,,,',
                                  '{\n  // early\n  "autoCompactWindow": 150000\n}'])
def test_a_settings_file_claude_code_cannot_read_leaves_the_meter_on_its_default(
        noted, isolated_home, text):
    """Claude Code ignores a settings file with a syntax error or a comment; so does the meter."""
    settings = noted / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text, encoding="utf-8")
    t = Transcript(noted / "t.jsonl")
    t.call(140_000)  # 80 % of the default 167k is 133.6k
    assert "about 167,000" in context_of(hook("post-tool", base(noted, "PostToolUse")),
                                         "PostToolUse")


def test_an_unwritable_session_folder_fails_open(noted, isolated_home):
    """A place the hook cannot write (here a file where its folder goes, which stops root too,
    unlike a read-only mode): no output, one log line, nothing else changes."""
    sessions = noted / ".loremap" / "sessions"
    sessions.write_text("not a folder", encoding="utf-8")
    result = hook("pre-tool", read_payload(noted, "src/auth/login.ts"))
    assert (result.returncode, result.stdout) == (0, "")
    assert len(hook_log(isolated_home)) == 1
    assert sessions.read_text(encoding="utf-8") == "not a folder"


@pytest.mark.parametrize("event", ["session-start", "prompt", "pre-tool", "post-tool", "stop",
                                   "pre-compact"])
def test_an_unwritable_home_never_breaks_a_hook(noted, tmp_path, event):
    """Home (logs, personal vault, caches) under a regular file: nothing there can be written,
    not even the log line. The hook still exits 0 and writes nothing to stderr; its stdout, if
    any, is one JSON object."""
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("x", encoding="utf-8")
    payload = {**read_payload(noted, "src/auth/login.ts"), "source": "startup",
               "prompt": "why does the login token expire?", "trigger": "auto",
               "stop_hook_active": False}
    result = hook(event, payload, {"LOREMAP_HOME": str(blocker / "loremap"),
                                   "HOME": str(blocker)})
    assert (result.returncode, result.stderr) == (0, "")
    if result.stdout:
        assert isinstance(json.loads(result.stdout), dict)


# --- event names: loremap's, the agents' own, the payload's ------------------------------------

HOOK_PROGRAM = Path(sys.executable).with_name("loremap-hook")
# Each agent's own event names (the shared reference on agents, section 5, and Claude Code's
# event enum) and the loremap event each one runs.
AGENT_EVENTS = {
    "claude-code": {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
                    "PreToolUse": "pre-tool", "PostToolUse": "post-tool", "Stop": "stop",
                    "PreCompact": "pre-compact", "SessionEnd": "session-end"},
    "codex": {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
              "PreToolUse": "pre-tool", "PostToolUse": "post-tool", "Stop": "stop",
              "PreCompact": "pre-compact", "SessionEnd": "session-end"},
    "gemini": {"SessionStart": "session-start", "BeforeAgent": "prompt",
               "BeforeTool": "pre-tool", "AfterTool": "post-tool", "AfterAgent": "stop",
               "PreCompress": "pre-compact", "SessionEnd": "session-end"},
}
ALIASES = sorted({(name, event) for names in AGENT_EVENTS.values()
                  for name, event in names.items()})


def program(args: list[str], payload: dict[str, Any], env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """The installed `loremap-hook` console script, as an agent runs it."""
    return subprocess.run([str(HOOK_PROGRAM), *args], input=json.dumps(payload),
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)


def rich_payload(project: Path, name: str) -> dict[str, Any]:
    """One payload that every event can act on: a prompt, a file read, a trigger."""
    return {**read_payload(project, "src/auth/login.ts"), "hook_event_name": name,
            "source": "startup", "prompt": "why does the login token expire?",
            "trigger": "auto", "stop_hook_active": False}


def forget_sessions(project: Path) -> None:
    sessions = project / ".loremap" / "sessions"
    for path in sessions.iterdir() if sessions.is_dir() else ():
        path.unlink()


@pytest.mark.parametrize("name,event", ALIASES, ids=[f"{n}-{e}" for n, e in ALIASES])
def test_an_agent_s_own_event_name_runs_the_same_as_loremap_s(noted, isolated_home, name,
                                                              event):
    ours = program([event], rich_payload(noted, name))
    forget_sessions(noted)  # what a session was already told is not said twice
    theirs = program([name], rich_payload(noted, name))
    assert (theirs.returncode, theirs.stderr) == (0, "")
    assert theirs.stdout == ours.stdout
    assert not any("unknown event" in line for line in hook_log(isolated_home))


@pytest.mark.parametrize("name", ["UserPromptSubmit", "BeforeAgent"])
def test_a_prompt_under_the_agent_s_name_recalls(noted, name):
    result = program([name], base(noted, name, prompt="why does the login token expire?"))
    assert NOTE_TITLE in context_of(result, "UserPromptSubmit")


@pytest.mark.parametrize("name", ["PreToolUse", "BeforeTool"])
def test_a_read_under_the_agent_s_name_gets_the_file_s_gotchas(noted, name):
    result = program([name], {**read_payload(noted, "src/auth/login.ts"),
                              "hook_event_name": name})
    assert NOTE_TITLE in context_of(result, "PreToolUse")


@pytest.mark.parametrize("name", ["PreCompact", "PreCompress"])
def test_a_compaction_under_the_agent_s_name_writes_the_session_record(noted, name):
    Transcript(noted / "t.jsonl").prompt("make the token refresh automatic")
    result = program([name], base(noted, name, trigger="auto"))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    record = noted / ".loremap" / "sessions" / "sess-1.record.md"
    assert "make the token refresh automatic" in record.read_text(encoding="utf-8")


@pytest.mark.parametrize("args", [[], ["no-such-event"]], ids=["missing", "unknown"])
def test_without_a_known_argument_the_payload_s_event_name_decides(noted, isolated_home, args):
    result = program(args, base(noted, "UserPromptSubmit",
                                prompt="why does the login token expire?"))
    assert NOTE_TITLE in context_of(result, "UserPromptSubmit")
    assert result.stderr == ""


def test_a_known_argument_wins_over_the_payload_s_event_name(noted):
    result = program(["pre-tool"], {**read_payload(noted, "src/auth/login.ts"),
                                    "hook_event_name": "UserPromptSubmit"})
    assert NOTE_TITLE in context_of(result, "PreToolUse")


@pytest.mark.parametrize("args,payload_name", [
    (["UserPromptSumbit"], "Notification"), ([], None), (["BeforeModel"], "BeforeModel"),
])
def test_an_event_known_by_neither_says_so_on_stderr_and_in_the_log(
        noted, isolated_home, args, payload_name):
    payload = base(noted, "x", prompt="why does the login token expire?")
    payload.pop("hook_event_name")
    if payload_name is not None:
        payload["hook_event_name"] = payload_name
    result = program(args, payload)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.count("\n") == 1 and "unknown event" in result.stderr
    assert "UserPromptSubmit" in result.stderr  # it names what would have worked
    logged = hook_log(isolated_home)
    assert len(logged) == 1 and "unknown event" in logged[0]
    assert not (noted / ".loremap" / "sessions").exists() or not any(
        (noted / ".loremap" / "sessions").iterdir())


def test_an_unknown_event_with_unreadable_stdin_still_says_unknown_event(isolated_home):
    done = subprocess.run([str(HOOK_PROGRAM), "Nope"], input=b"", capture_output=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"unknown event 'Nope'" in done.stderr
