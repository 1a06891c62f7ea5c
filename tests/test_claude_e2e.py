"""The plugin in the real Claude Code: `claude -p` (2.1.328, from npm) loads `plugin/` with
`--plugin-dir`, runs our hooks and our MCP server, and talks to a scripted stand-in for the
Messages API on loopback (tests/standin_api.py), so no credentials and no network are needed.

What is asserted is what reaches the model (the request bodies the stand-in recorded), what
lands in the repository (notes, session records) and what Claude Code writes in its transcript.
`claude_env` is the environment such a run needs, each variable with its reason; Claude Code's
own account of a run is its debug log (`claude-debug.log` in the test's folder). A run takes a
few seconds; the time is printed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import git, run_cli_process
from npm_tools import npm_tool
from standin_api import (
    Received,
    StandIn,
    Step,
    Text,
    ToolUse,
    Usage,
    fixed_usage,
    growing_usage,
    hook_contexts,
    last_user_text,
)

pytestmark = pytest.mark.slow

TOOL = "mcp__plugin_loremap_loremap__"
FENCE = '<project-memory from="loremap"'
PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
NOTE_TITLE = "Coupons apply after the cart total in apply_coupon"
USAGE_MARK = 4321  # input tokens the stand-in reports, to find again in the transcript


@dataclass
class Run:
    result: dict[str, Any]
    requests: list[Received]
    transcript: list[dict[str, Any]]

    def after_compaction(self) -> list[Received]:
        """The requests after the compaction request (the conversation it summarised)."""
        index = next(i for i, r in enumerate(self.requests) if r.kind == "compaction")
        return self.requests[index + 1:]

    def attachments(self, kind: str, event: str, start: int = 0) -> list[str]:
        """The content of the hook attachments of the transcript from entry `start` on."""
        found = [entry["attachment"]["content"] for entry in self.transcript[start:]
                 if entry.get("type") == "attachment"
                 and entry["attachment"].get("type") == kind
                 and entry["attachment"].get("hookEvent") == event]
        # 2.1.328 stores `hook_additional_context` as a list of strings, `hook_success` as one.
        return ["\n".join(c) if isinstance(c, list) else str(c) for c in found]


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A git repository with two Python files, `loremap init` run and one gotcha written."""
    root = tmp_path / "shopfront"
    (root / "src" / "billing").mkdir(parents=True)
    (root / "src" / "billing" / "coupons.py").write_text(
        "def apply_coupon(cart, coupon):\n    return cart.total - coupon.amount\n",
        encoding="utf-8")
    (root / "src" / "billing" / "checkout.py").write_text(
        "from billing.coupons import apply_coupon\n\n\ndef checkout(cart, coupon):\n"
        "    return round(apply_coupon(cart, coupon), 2)\n", encoding="utf-8")
    git(tmp_path, "init", "-q", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    loremap(root, "init")
    loremap(root, "remember", "--type", "gotcha", "--title", NOTE_TITLE,
            "-m", "apply_coupon subtracts from the summed cart total, never per line.",
            "--file", "src/billing/coupons.py")
    return root


def loremap(root: Path, *args: str) -> str:
    done = run_cli_process(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def claude() -> Path:
    return npm_tool("claude")


def claude_env(tmp_path: Path, base_url: str, path_first: Path | None = None,
               daemon: bool = False) -> dict[str, str]:
    # The caller's own Claude Code or API settings must not leak into the run.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_"))}
    if daemon:
        # The hooks and `loremap serve` go through the running daemon.
        env.pop("LOREMAP_DAEMON", None)
    env.update({
        "HOME": str(tmp_path / "claude-home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-placeholder",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_AUTOUPDATER": "1",
        # Trigger: `claude -p` starts MCP servers "fully async" and sends its first request with
        # the tools of the servers connected by then. Why: `loremap serve` takes seconds to
        # connect on a loaded machine (the SDK import alone), so that request went out without
        # loremap's tools. Outcome: told to block, it waits for the servers (up to
        # MCP_CONNECT_TIMEOUT_MS); MCP_TIMEOUT is how long one server may take to connect.
        # Through a warm daemon too: connecting in a process start is a speed, measured by
        # bench/mcp.py (p50 next to the cold start), and a machine loaded enough stretches a
        # process start past Claude Code's first request.
        "MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "120000",
        "MCP_TIMEOUT": "120000",
        # This venv's `loremap` and `loremap-hook` first: the plugin names them bare.
        "PATH": os.pathsep.join([*([str(path_first)] if path_first else []),
                                 str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    return env


def run_claude(claude: Path, root: Path, tmp_path: Path, prompt: str, steps: list[Step],
               *flags: str, usage: Usage | None = None,
               by_model: dict[str, list[Step]] | None = None, allowed: str = "",
               path_first: Path | None = None, daemon: bool = False) -> Run:
    standin = StandIn(steps, usage=usage or fixed_usage(USAGE_MARK), by_model=by_model or {})
    with standin:
        started = time.monotonic()
        done = subprocess.run(
            [str(claude), "-p", prompt, "--plugin-dir", str(PLUGIN),
             "--allowedTools", ",".join(filter(None, ["mcp__plugin_loremap_loremap", allowed])),
             "--output-format", "json",
             "--debug-file", str(tmp_path / "claude-debug.log"), *flags],
            cwd=root, env=claude_env(tmp_path, standin.url, path_first, daemon),
            stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=240)
        seconds = time.monotonic() - started
        requests = list(standin.requests)
    print(f"claude -p took {seconds:.1f} s for {len(requests)} requests")
    debug = (tmp_path / "claude-debug.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, done.stdout + done.stderr + debug[-3000:]
    missing = [(n, r.kind) for n, r in enumerate(requests) if r.kind.startswith("missing ")]
    assert not missing, (
        f"request {missing[0][0]} did not offer {missing[0][1].split()[1]}: Claude Code sent it "
        "before the MCP server was connected; its [MCP] lines:\n"
        + "\n".join(line for line in debug.splitlines() if "MCP" in line)[-3000:])
    result = json.loads(done.stdout)
    assert result["is_error"] is False and result["subtype"] == "success", result
    path, = (tmp_path / "claude-config" / "projects").glob(f"*/{result['session_id']}.jsonl")
    transcript = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return Run(result, requests, transcript)


def tool_result(run: Run, tool_use_id: str) -> dict[str, Any]:
    """The tool_result Claude Code sent back for one of the stand-in's tool calls."""
    for received in run.requests:
        for message in received.body["messages"]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result" and block["tool_use_id"] == tool_use_id:
                        return dict(block)
    raise AssertionError(f"no tool_result for {tool_use_id}")


def one_context(received: Received, event: str) -> str:
    """The one loremap fence the `event` hook put in this request."""
    found = hook_contexts(received.text, event)
    assert len(found) == 1, f"{len(found)} loremap {event} contexts in the request, not 1"
    return found[0]


def slow_loremap(tmp_path: Path, seconds: int) -> Path:
    """A folder whose `loremap` starts `serve` `seconds` late, as a loaded machine does."""
    folder = tmp_path / "slow-bin"
    folder.mkdir()
    real = shlex.quote(str(Path(sys.executable).parent / "loremap"))
    script = folder / "loremap"
    script.write_text(f'#!/bin/sh\nif [ "$1" = serve ]; then sleep {seconds}; fi\n'
                      f'exec {real} "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return folder


def tool_use_ids(run: Run, name: str) -> list[str]:
    return [block["id"] for received in run.requests
            for block in received.reply.get("content", [])
            if block["type"] == "tool_use" and block["name"] == name]


def test_one_turn_gets_the_map_and_the_recalled_note_and_remembers_through_the_mcp_server(
        claude, shop, tmp_path):
    decision = {"type": "decision", "title": "Checkout rounds the total to cents once",
                "body": "checkout() rounds after apply_coupon, so coupons never see cents."}
    steps: list[Step] = [
        ToolUse(TOOL + "recall", {"query": "coupons cart total apply_coupon"}),
        ToolUse(TOOL + "remember", {"facts": [decision]}),
        Text("done")]
    run = run_claude(claude, shop, tmp_path, "Why do coupons apply after the cart total?",
                     steps)
    assert run.result["result"] == "done" and run.result["permission_denials"] == []
    first = run.requests[0]
    assert TOOL + "recall" in {tool["name"] for tool in first.body["tools"]}

    # SessionStart: the map, fenced as loremap's data.
    map_title = (shop / ".loremap" / "map.md").read_text(encoding="utf-8").splitlines()[0]
    assert map_title == "# Map of shopfront"
    start = one_context(first, "SessionStart")
    assert map_title in start
    # UserPromptSubmit: the note the prompt is about, recalled by the hook.
    prompt = one_context(first, "UserPromptSubmit")
    assert NOTE_TITLE in prompt

    # The real MCP client called our server: recall found the note, remember wrote one.
    recall_id, = tool_use_ids(run, TOOL + "recall")
    recalled = tool_result(run, recall_id)
    assert not recalled.get("is_error") and NOTE_TITLE in json.dumps(recalled)
    remember_id, = tool_use_ids(run, TOOL + "remember")
    assert "created decision-" in json.dumps(tool_result(run, remember_id))
    written = [p for p in (shop / ".loremap" / "notes").glob("decision-*.md")
               if decision["title"] in p.read_text(encoding="utf-8")]
    assert len(written) == 1
    found = json.loads(loremap(shop, "search", "checkout rounds total cents", "--json"))
    assert decision["title"] in [item.get("title") for item in found["items"]]

    # The transcript keeps the hooks' context and the usage the stand-in reported.
    assert any(FENCE in text for text in run.attachments("hook_additional_context",
                                                         "SessionStart"))
    assert any(NOTE_TITLE in text for text in run.attachments("hook_additional_context",
                                                              "UserPromptSubmit"))
    usages = [entry["message"]["usage"] for entry in run.transcript
              if entry.get("type") == "assistant"]
    assert len(usages) == 3 and {u["input_tokens"] for u in usages} == {USAGE_MARK}


def test_the_first_request_offers_the_tools_of_an_mcp_server_that_starts_late(
        claude, shop, tmp_path):
    """Started three seconds late, the server is still connected before the first request:
    the model is never asked to work without loremap's tools (the default `claude -p` sends
    its first request at once)."""
    steps: list[Step] = [ToolUse(TOOL + "recall", {"query": "coupons cart total"}), Text("done")]
    run = run_claude(claude, shop, tmp_path, "What does the memory say about coupons?", steps,
                     path_first=slow_loremap(tmp_path, 3))
    assert run.result["result"] == "done"
    assert TOOL + "recall" in {tool["name"] for tool in run.requests[0].body["tools"]}
    recall_id, = tool_use_ids(run, TOOL + "recall")
    assert NOTE_TITLE in json.dumps(tool_result(run, recall_id))


def test_through_a_warm_daemon_the_session_and_the_hooks_answer(claude, shop, tmp_path):
    """Claude Code with a warm daemon: `loremap serve` relays the MCP session to it and the
    hooks answer through it; the recall, the map and the prompt's memory are the same as in
    their own processes. (How fast the relay connects is bench/mcp.py's to measure.)"""
    from loremap import wire

    env = {k: v for k, v in os.environ.items() if k != "LOREMAP_DAEMON"}
    daemon = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wire.wait_ready(env, 60)
        steps: list[Step] = [ToolUse(TOOL + "recall", {"query": "coupons cart total"}),
                             Text("done")]
        run = run_claude(claude, shop, tmp_path, "Why do coupons apply after the cart total?",
                         steps, daemon=True)
        first = run.requests[0]
        assert TOOL + "recall" in {tool["name"] for tool in first.body["tools"]}
        assert "# Map of shopfront" in one_context(first, "SessionStart")
        assert NOTE_TITLE in one_context(first, "UserPromptSubmit")
        recall_id, = tool_use_ids(run, TOOL + "recall")
        assert NOTE_TITLE in json.dumps(tool_result(run, recall_id))
        answer = wire.ask({"op": "status"}, env)
        assert answer is not None and answer["requests"] >= 4  # hooks and the session
    finally:
        daemon.terminate()
        daemon.wait(60)


def sessions(root: Path) -> set[str]:
    folder = root / ".loremap" / "sessions"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def test_auto_compaction_records_the_session_and_brings_back_the_memory_and_the_handoff(
        claude, shop, tmp_path):
    goal = "Move the coupon rounding into checkout"
    loremap(shop, "handoff", "save", "--goal", goal, "--next", "write the rounding test")
    before = sessions(shop)
    # Seven tool rounds whose reported input grows by 15,000 tokens each: with a window of
    # 100,000 Claude Code compacts once a request reports more than about 67,000.
    steps: list[Step] = [ToolUse(TOOL + "recall", {"query": f"coupon rounding step {i}"})
                         for i in range(7)]
    run = run_claude(claude, shop, tmp_path, "Carry on with the rounding work.", steps,
                     "--autocompact", "100000", usage=growing_usage())
    assert run.result["result"] == "done"

    boundaries = [i for i, entry in enumerate(run.transcript)
                  if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"]
    assert [run.transcript[i]["compactMetadata"]["trigger"] for i in boundaries] == ["auto"]
    # PreCompact: the hook wrote a record of the session before its context was summarised
    # (other hooks keep a small state file beside it, so the record is named exactly).
    record = f"{run.result['session_id']}.record.md"
    assert record in sessions(shop) - before, sorted(sessions(shop))
    assert (shop / ".loremap" / "sessions" / record).read_text(encoding="utf-8").strip()

    # SessionStart(compact): the memory and the open handoff come back after compaction. The
    # summary replaced the startup context, so each later request holds one SessionStart
    # context, the compact one; in the transcript it is the one after the boundary.
    later = run.after_compaction()
    assert later, "no request after compaction"
    for received in later:
        start = one_context(received, "SessionStart")
        assert FENCE in start and goal in start
    assert any(goal in text for text in run.attachments("hook_additional_context",
                                                        "SessionStart", boundaries[0]))



def test_reading_a_file_brings_the_gotcha_recorded_about_it(claude, shop, tmp_path):
    path = str(shop / "src" / "billing" / "coupons.py")
    run = run_claude(claude, shop, tmp_path, "Show me the code.",
                     [ToolUse("Read", {"file_path": path}), Text("done")])
    assert run.result["result"] == "done"
    # Claude Code names the tool too: "PreToolUse:Read hook additional context: ...".
    notes = one_context(run.requests[-1], "PreToolUse:Read")
    assert NOTE_TITLE in notes
    assert "apply_coupon" in json.dumps(tool_result(run, tool_use_ids(run, "Read")[0]))


def test_the_researcher_runs_on_haiku_with_read_only_tools_and_hands_back_its_conclusion(
        claude, shop, tmp_path):
    conclusion = "apply_coupon in src/billing/coupons.py subtracts from the cart total."
    ask = {"subagent_type": "loremap:researcher", "description": "Find the coupon rule",
           "prompt": "Where are coupons applied to the cart?", "run_in_background": False}
    run = run_claude(claude, shop, tmp_path, "Ask the researcher where coupons are applied.",
                     [ToolUse("Agent", ask), Text("done")], allowed="Agent",
                     by_model={"haiku": [ToolUse(TOOL + "recall", {"query": "coupons cart"}),
                                         Text(conclusion)]})
    assert run.result["result"] == "done"
    researcher = [r for r in run.requests if "haiku" in r.body["model"]]
    assert len(researcher) == 2
    for received in researcher:
        assert {tool["name"] for tool in received.body["tools"]} == {
            "Read", "Grep", "Glob", TOOL + "recall", TOOL + "read", TOOL + "map"}
    recall_id, = tool_use_ids(run, TOOL + "recall")
    assert NOTE_TITLE in json.dumps(tool_result(run, recall_id))
    # Only the conclusion comes back to the main agent, not what the researcher read.
    agent_id, = tool_use_ids(run, "Agent")
    handed_back = json.dumps(tool_result(run, agent_id))
    assert conclusion in handed_back and NOTE_TITLE not in handed_back


def test_a_slash_command_reaches_the_model_with_its_arguments(claude, shop, tmp_path):
    question = "why coupons apply after the cart total"
    run = run_claude(claude, shop, tmp_path, f"/loremap:recall {question}",
                     [ToolUse(TOOL + "recall", {"query": question}), Text("done")])
    assert run.result["result"] == "done"
    asked = last_user_text(run.requests[0].body)
    assert f"The question: {question}" in asked and "Call the `recall` tool" in asked
    assert "$ARGUMENTS" not in asked


def test_a_failing_command_brings_the_remedy_recorded_for_its_error(claude, shop, tmp_path):
    loremap(shop, "remember", "--type", "procedure", "--title", "Create the build folder first",
            "-m", "mkdir -p build before listing or writing into it.")
    loremap(shop, "remember", "--type", "error", "--title", "The build folder is missing",
            "-m", "A fresh clone has no build/ folder.",
            "--error", "ls: cannot access 'build/out': No such file or directory",
            "--remedy", "procedure-create-the-build-folder-first", "--command", "ls build/out")
    run = run_claude(claude, shop, tmp_path, "List the build output.",
                     [ToolUse("Bash", {"command": "ls build/out", "description": "list"}),
                      Text("done")], allowed="Bash")
    assert run.result["result"] == "done"
    # Before the command: the error note that records this very command.
    before = one_context(run.requests[-1], "PreToolUse:Bash")
    assert "This command failed before" in before and "The build folder is missing" in before
    # After it failed (Claude Code's PostToolUseFailure with its "Exit code 2" text): the
    # remedy, named by the error's signature whatever the path was.
    after = one_context(run.requests[-1], "PostToolUseFailure:Bash")
    assert "`ls: cannot access <path>: no such file or directory`" in after
    assert "fixed by [Create the build folder first] (procedure-create-the-build-folder-first)" \
        in after
    logged = json.loads(loremap(shop, "errors", "--json"))["errors"]
    assert [(e["count"], e["command"]) for e in logged] == [(1, "ls build/out")]
