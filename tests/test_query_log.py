"""The log of what the agents asked and what they opened next (sessions/queries.py), kept by
the prompt hook, the pre-tool hook and the MCP tools; and `loremap calibrate` fitted on it
when no dataset is given."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import git
from loremap.hook.pretool import pre_tool
from loremap.hook.prompt import prompt
from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from loremap.sessions.queries import FOLLOW, MAX_QUERY, QUERIES_LOG, asked, log_open, log_query
from loremap.vault import fs

TOPICS = ["refund", "coupon", "password", "invoice", "image", "email", "session", "export",
          "search", "webhook", "flag", "timezone", "upload", "report", "tax", "shipping",
          "inventory", "review", "wishlist", "newsletter", "currency", "address"]
TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"  # a GitHub token shape (fake)


@pytest.fixture
def shop(project: Path, cli: Any) -> Path:
    """A project whose code map holds one module per topic."""
    pkg = project / "src" / "shop"
    pkg.mkdir(parents=True)
    for word in TOPICS:
        (pkg / f"{word}.py").write_text(
            f'"""The {word} rules of the shop: how a {word} is checked and stored."""\n\n\n'
            f"def check_{word}(value):\n    return value\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "The shop")
    assert cli("index").code == 0
    return project


def log_lines(project: Path) -> list[dict[str, str]]:
    path = project / ".loremap" / QUERIES_LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def ask(project: Path, text: str, session: str = "s1") -> str:
    return prompt({"session_id": session, "cwd": str(project), "prompt": text,
                   "hook_event_name": "UserPromptSubmit"}, os.environ)


def open_file(project: Path, path: str, session: str = "s1", tool: str = "Read") -> str:
    return pre_tool({"session_id": session, "cwd": str(project), "tool_name": tool,
                     "tool_input": {"file_path": str(project / path)},
                     "hook_event_name": "PreToolUse"}, os.environ)


def test_the_hooks_log_a_question_and_the_files_opened_after_it(shop):
    ask(shop, f"how is a refund checked? my key is {TOKEN}")
    open_file(shop, "src/shop/refund.py")
    open_file(shop, "src/shop/refund.py")  # the same file again is one open
    open_file(shop, "src/shop/tax.py", session="other")  # another session's open
    lines = log_lines(shop)
    assert [sorted(line) for line in lines] == [["at", "query", "session"],
                                                ["at", "opened", "session"]] * 1 + \
        [["at", "opened", "session"]] * 2
    assert TOKEN not in (shop / ".loremap" / QUERIES_LOG).read_text(encoding="utf-8")
    assert lines[0]["session"] == "s1" and "refund" in lines[0]["query"]
    assert [a.opened for a in asked(shop / ".loremap")] == [("src/shop/refund.py",)]
    # .loremap/cache is ignored by git: the log is this machine's, never committed
    assert git(shop, "status", "--porcelain", "--", ".loremap/cache") == ""


def test_an_open_with_no_log_writes_none_and_trivial_prompts_are_not_logged(shop):
    open_file(shop, "src/shop/refund.py")
    ask(shop, "yes")
    ask(shop, "/compact")
    assert log_lines(shop) == []


def test_logging_off_logs_nothing_and_a_question_deletes_the_log(shop, monkeypatch):
    ask(shop, "how is a coupon checked")
    assert log_lines(shop)
    config = shop / ".loremap" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8")
                      + "\n[search]\nlog_queries = false\n", encoding="utf-8")
    before = log_lines(shop)
    open_file(shop, "src/shop/coupon.py")  # the pre-tool hook reads the setting
    assert log_lines(shop) == before
    ask(shop, "how is an invoice checked")
    assert not (shop / ".loremap" / QUERIES_LOG).exists()
    config.write_text(config.read_text(encoding="utf-8").replace("false", "true"),
                      encoding="utf-8")
    monkeypatch.setenv("LOREMAP_LOG_QUERIES", "0")
    ask(shop, "how is an invoice checked")
    assert not (shop / ".loremap" / QUERIES_LOG).exists()


def test_pairing_rules(tmp_path):
    loremap_dir = tmp_path / ".loremap"
    loremap_dir.mkdir()
    log_query(loremap_dir, "a", "first question")
    for n in range(FOLLOW + 2):
        log_open(loremap_dir, "a", f"f{n}")
    log_query(loremap_dir, "b", "never led anywhere")
    log_query(loremap_dir, "a", "second   question")
    log_open(loremap_dir, "a", "g")
    log_query(loremap_dir, "a", "first question")  # asked again: its latest answer counts
    log_open(loremap_dir, "a", "h")
    path = loremap_dir / QUERIES_LOG
    with path.open("a", encoding="utf-8") as fh:
        fh.write('not json\n{"session": "a"}\n{"at": "yesterday", "session": "a", "opened": "x"}\n'
                 '{"at": "2020-01-01T00:00:00Z", "session": "c", "query": "old"}\n'
                 '{"at": "2020-01-01T01:00:01Z", "session": "c", "opened": "late"}\n')
    assert [(a.query, a.opened) for a in asked(loremap_dir)] == [
        ("second question", ("g",)), ("first question", ("h",))]
    log_query(loremap_dir, "a", "x" * (MAX_QUERY * 3))
    assert len(json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["query"]) \
        == MAX_QUERY


def test_the_log_keeps_its_newer_half_past_its_cap(tmp_path):
    path = tmp_path / "cache" / "log.jsonl"
    for n in range(200):
        fs.append_capped(path, f'{{"n": {n}}}\n'.encode(), tmp_path, 1_000)
    kept = [json.loads(line)["n"] for line in path.read_text().splitlines()]
    assert len(path.read_bytes()) <= 1_000 and kept[-1] == 199
    assert kept == list(range(kept[0], 200))  # whole lines, the newest, in order


def test_a_log_that_is_a_symlink_is_refused(tmp_path):
    from loremap.errors import UnsafePath

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("", encoding="utf-8")
    (tmp_path / "repo" / "cache").mkdir(parents=True)
    (tmp_path / "repo" / "cache" / "log.jsonl").symlink_to(outside)
    with pytest.raises(UnsafePath):
        fs.append_capped(tmp_path / "repo" / "cache" / "log.jsonl", b"x\n", tmp_path / "repo",
                         1_000)
    assert outside.read_text(encoding="utf-8") == ""


def test_the_mcp_tools_log_a_client_session_s_recall_and_read(shop):
    async def body(c: Client) -> None:
        await c.call_tool("recall", {"query": "how is a webhook checked"})
        await c.call_tool("read", {"target": "src/shop/webhook.py"})

    async def main(mode: str) -> None:
        server = build_server(Projects(shop), "lean")
        async with Client(server, mode=mode) as c:
            await body(c)
    anyio.run(main, "legacy")  # a session: the handshake of the clients in the field
    lines = log_lines(shop)
    assert [line.get("query") or line.get("opened") for line in lines] == [
        "how is a webhook checked", "src/shop/webhook.py"]
    assert lines[0]["session"] == lines[1]["session"] and lines[0]["session"].startswith("mcp-")
    anyio.run(main, "auto")  # stateless (2026-07-28): no request knows the one before it
    assert log_lines(shop) == lines


def questions(project: Path, count: int) -> None:
    for n, word in enumerate(TOPICS[:count]):
        ask(project, f"how is a {word} checked and stored", session=f"s{n % 3}")
        open_file(project, f"src/shop/{word}.py", session=f"s{n % 3}")


def test_calibrate_without_a_dataset_fits_the_logged_questions(shop, cli):
    questions(shop, len(TOPICS))
    config = shop / ".loremap" / "config.toml"
    before = config.read_bytes()
    done = cli("calibrate", "--json")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert data["source"] == ".loremap/cache/queries.jsonl"
    assert data["answerable"] == len(TOPICS) and data["unanswerable"] == 0
    assert data["after"]["false_abstention"] <= 0.03
    assert data["after"]["true_abstention"] is None and data["after"]["true_interval"] is None
    assert data["after"]["threshold"] > data["before"]["threshold"]  # these questions hold more
    assert config.read_bytes() == before
    text = cli("calibrate")
    assert "true abstention not measured" in text.out
    assert cli("calibrate", "--apply").code == 0
    written = config.read_text(encoding="utf-8")
    assert f"coverage={data['after']['threshold']:g}" in written
    assert "on .loremap/cache/queries.jsonl" in written and "no unanswerable ones" in written
    doctor = cli("doctor")
    assert "calibrated" in doctor.out and "queries.jsonl" in doctor.out


def test_calibrate_with_too_few_logged_questions_refuses_and_says_how_many(shop, cli):
    questions(shop, 5)
    ask(shop, "a question after which nothing was opened")
    log_open(shop / ".loremap", "s9", "src/shop/refund.py")  # an open with no question
    config = shop / ".loremap" / "config.toml"
    before = config.read_bytes()
    done = cli("calibrate", "--apply")
    assert done.code != 0 and config.read_bytes() == before
    assert done.err.count("\n") == 1 and "holds 5" in done.err and "at least 20" in done.err
