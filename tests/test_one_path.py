"""One recall path: the CLI, the MCP server and the prompt hook return the same items.

Each front end only translates its arguments into `loremap.use.recall.Question`; these tests
ask the same question through the three (the MCP server through the SDK's in-memory client, the
hook as the subprocess an agent runs) and compare what comes back, path filters included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import git
from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from test_mcp import text

QUESTION = "why are coupons applied after the cart total"


@pytest.fixture
def shop(project: Path, cli) -> Path:
    """A project with code under src/ and under srcfoo/ (a sibling sharing the prefix), and
    notes about both."""
    for folder in ("src/shop", "srcfoo"):
        (project / folder).mkdir(parents=True, exist_ok=True)
    (project / "src" / "shop" / "cart.py").write_text(
        '"""The cart: lines, totals and coupons."""\n\n\ndef cart_total(lines):\n'
        "    return apply_coupon(sum(lines))\n", encoding="utf-8")
    (project / "srcfoo" / "coupons.py").write_text(
        '"""Coupon codes of the old cart."""\n\n\ndef old_coupon_total(cart):\n'
        "    return cart\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "shop")
    assert cli("index").code == 0
    assert cli("remember", "-t", "gotcha", "--title", "Coupons apply after the cart total",
               "--file", "src/shop/cart.py", "-m", "A line coupon would count twice.").code == 0
    assert cli("remember", "-t", "decision", "--title", "Old coupons stay in srcfoo",
               "--file", "srcfoo/coupons.py", "-m", "The old cart total code is frozen.",
               ).code == 0
    return project


def headers(lines: list[str]) -> list[str]:
    """The first line of each item ("[kind] title ..."), in rank order."""
    return [line for line in lines if line.startswith("[")]


def cli_items(cli, *args: str) -> list[str]:
    result = cli("search", QUESTION, *args)
    assert result.code == 0, result.err
    return headers(result.out.splitlines())


def mcp_items(root: Path, arguments: dict[str, object]) -> list[str]:
    out: list[str] = []

    async def main() -> None:
        async with Client(build_server(Projects(root))) as client:
            result = await client.call_tool("recall", {"query": QUESTION, **arguments})
            assert not result.is_error, text(result)
            out.extend(text(result).splitlines())

    anyio.run(main)
    return headers(out)


def hook_items(root: Path) -> list[str]:
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": QUESTION, "cwd": str(root),
               "session_id": "s1"}
    done = subprocess.run([sys.executable, "-m", "loremap.hook", "prompt"],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=120,
                          env={**os.environ, "LOREMAP_HOOK_BUDGET": "1500"}, check=True)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return headers(context.splitlines())


def test_the_cli_the_mcp_tool_and_the_prompt_hook_recall_the_same_items(shop, cli):
    through_cli = cli_items(cli, "--budget", "1500")
    assert through_cli and "Coupons apply after the cart total" in through_cli[0]
    assert mcp_items(shop, {"budget": 1500}) == through_cli
    assert hook_items(shop) == through_cli


def test_a_files_filter_of_dot_is_the_whole_repository_everywhere(shop, cli):
    everything = cli_items(cli)
    assert cli_items(cli, "--file", ".") == everything
    assert mcp_items(shop, {"files": ["."]}) == everything
    assert mcp_items(shop, {"files": ["./"]}) == everything


def test_a_folder_filter_never_matches_a_sibling_that_shares_its_prefix(shop, cli):
    under_src = cli_items(cli, "--file", "src/")
    assert under_src and not any("srcfoo" in line or "Old coupons" in line
                                 for line in under_src)
    assert cli_items(cli, "--file", "src") == under_src
    assert mcp_items(shop, {"files": ["src/"]}) == under_src
    assert mcp_items(shop, {"files": ["src"]}) == under_src


def test_a_path_outside_the_repository_is_refused_like_show_refuses_it(shop, cli):
    search = cli("search", QUESTION, "--file", "/etc")
    show = cli("show", "/etc/hostname")
    assert search.code == show.code == 1
    assert "outside the repository" in search.err and "outside the repository" in show.err


@pytest.mark.parametrize("args, message", [
    (("--limit", "0"), "limit 0: recall at least 1 item"),
    (("--as-of", "2026-13-01"), "2026-13-01"),
])
def test_bad_recall_values_get_one_line(shop, cli, args, message):
    result = cli("search", QUESTION, *args)
    assert result.code in (1, 2) and message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_the_budget_never_reports_more_left_out_items_than_the_limit(shop, cli):
    result = cli("search", "coupon cart total lines old code", "--budget", "40", "--limit", "2",
                 "--json")
    found = json.loads(result.out)
    assert found["left_out"] and len(found["items"]) + found["left_out"] <= 2


def test_a_tool_call_reads_paths_from_the_repository_root_wherever_the_server_runs(
        shop, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # an HTTP daemon serving several projects runs from anywhere
    out: list[str] = []

    async def main() -> None:
        async with Client(build_server(Projects(shop))) as client:
            result = await client.call_tool("remember", {"facts": [{
                "type": "gotcha", "title": "Totals round half up",
                "body": "cart_total rounds at the end.", "files": ["src/shop/cart.py"]}]})
            assert not result.is_error, text(result)
            out.append(text(await client.call_tool("read", {"target": "src/shop/cart.py"})))

    anyio.run(main)
    assert "Totals round half up" in out[0]
