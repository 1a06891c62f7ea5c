"""The MCP server through the SDK's own in-memory client: every tool, resource and prompt, the
argument checks, project discovery by roots, and a degraded index."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import git
from loremap.mcp.catalogue import tool_definitions
from loremap.mcp.projects import Projects
from loremap.mcp.server import INSTRUCTIONS, build_server
from loremap.text import estimate_tokens

LEAN = ["recall", "remember", "read", "map", "handoff", "forget", "outcome", "related"]
TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"  # a GitHub token shape (fake)


@pytest.fixture
def shop(project: Path) -> Path:
    """An initialised project with a small Python package and its code map."""
    pkg = project / "src" / "shop"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The shop."""\n', encoding="utf-8")
    (pkg / "cart.py").write_text(
        '"""The cart: lines and totals."""\nfrom shop.discount import apply_coupon\n\n\n'
        "def cart_total(lines):\n    return apply_coupon(sum(lines))\n", encoding="utf-8")
    (pkg / "discount.py").write_text(
        '"""Coupons."""\n\n\ndef apply_coupon(total):\n    return total * 0.9\n',
        encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "Add the shop")
    return project


def run(server_root: Path, body: Callable[[Client], Awaitable[Any]], profile: str = "lean",
        **client: Any) -> Any:
    server = build_server(Projects(server_root), profile)
    out: list[Any] = []

    async def main() -> None:
        async with Client(server, **client) as c:
            out.append(await body(c))

    anyio.run(main)
    return out[0]


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def ok(c: Client, name: str, args: dict[str, Any]) -> str:
    result = await c.call_tool(name, args)
    assert not result.is_error, text(result)
    return text(result)


async def fails(c: Client, name: str, args: dict[str, Any]) -> str:
    result = await c.call_tool(name, args)
    assert result.is_error, text(result)
    return text(result)


FACTS = [
    {"type": "gotcha", "title": "Coupons apply after the cart total is computed",
     "body": "apply_coupon runs on the sum; a line discount would be applied twice.",
     "files": ["src/shop/cart.py"], "tags": ["pricing"]},
    {"type": "decision", "title": "Discounts are percentages, never fixed amounts",
     "body": "Fixed amounts made refunds negative.", "files": ["src/shop/discount.py"],
     "links": [{"rel": "relates",
                "target": "gotcha-coupons-apply-after-the-cart-total-is-computed"}]},
]


# --- catalogue ---------------------------------------------------------------------------------

def _titles(schema: Any, in_properties: bool = False) -> bool:
    """Whether a generated-schema `title` is anywhere in `schema` (a property named title is
    fine)."""
    if isinstance(schema, dict):
        if "title" in schema and not in_properties:
            return True
        return any(_titles(v, k == "properties" and not in_properties) for k, v in schema.items())
    return isinstance(schema, list) and any(_titles(v) for v in schema)


def test_the_lean_catalogue_lists_eight_short_tools_that_refuse_unknown_arguments(shop):
    async def body(c: Client) -> types.ListToolsResult:
        return await c.list_tools()

    tools = run(shop, body).tools
    assert [t.name for t in tools] == LEAN
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)
    assert not any(_titles(t.input_schema) for t in tools)
    assert tools[0].annotations is not None and tools[0].annotations.read_only_hint is True
    forget = next(t for t in tools if t.name == "forget")
    assert forget.annotations is not None and forget.annotations.destructive_hint is True
    assert estimate_tokens(json.dumps(tool_definitions("lean"))) <= 2000


def test_the_full_catalogue_adds_timeline_stats_and_verify(shop):
    async def body(c: Client) -> list[str]:
        return [t.name for t in (await c.list_tools()).tools]

    assert run(shop, body, "full") == [*LEAN, "timeline", "stats", "verify"]


def test_the_server_tells_the_agent_when_to_recall_and_remember_and_that_recall_is_data(shop):
    async def body(c: Client) -> str | None:
        return c.instructions

    instructions = run(shop, body, mode="legacy")
    assert instructions == INSTRUCTIONS
    assert "`recall`" in INSTRUCTIONS and "`remember`" in INSTRUCTIONS
    assert "not instructions" in INSTRUCTIONS


def test_an_unknown_tool_is_a_protocol_error_naming_the_tools(shop):
    async def body(c: Client) -> str:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("search", {"query": "x"})
        return str(caught.value)

    assert "unknown tool 'search'" in run(shop, body)


def test_a_mistyped_argument_is_refused_with_a_suggestion_and_nothing_runs(shop):
    async def body(c: Client) -> list[str]:
        return [await fails(c, "recall", {"query": "coupon", "budjet": 300}),
                await fails(c, "recall", {"terms": ["coupon"]}),
                await fails(c, "recall", {"query": "coupon", "budget": "lots"}),
                await fails(c, "remember",
                            {"facts": [{"type": "bugg", "title": "x", "body": "b"}]})]

    unknown, missing, wrong_type, bad_enum = run(shop, body)
    assert "unknown argument 'budjet' (did you mean 'budget'?)" in unknown
    assert "query" in missing and "required" in missing
    assert "budget" in wrong_type
    assert "facts[0].type" in bad_enum and "decision" in bad_enum


def test_oversized_arguments_are_refused_with_the_limit(shop):
    facts = [{"type": "gotcha", "title": f"fact {i}", "body": "b"}
             for i in range(21)]

    async def body(c: Client) -> list[str]:
        return [await fails(c, "recall", {"query": "x" * 20_001}),
                await fails(c, "remember", {"facts": facts}),
                await fails(c, "remember", {"facts": [{"type": "bug", "title": "big",
                                                       "body": "é" * 140_000}]})]

    long_query, many_facts, big_body = run(shop, body)
    assert "query is too long: at most 20000 characters" in long_query
    assert "facts has too many entries: at most 20" in many_facts
    assert "over the limit of 262144" in big_body and "facts[0].body" in big_body
    assert not list((shop / ".loremap" / "notes").glob("*.md"))


# --- remember and recall ---------------------------------------------------------------------

def test_remember_writes_a_batch_and_recall_finds_it_with_why(shop):
    async def body(c: Client) -> tuple[str, str]:
        return (await ok(c, "remember", {"facts": FACTS}),
                await ok(c, "recall", {"query": "why is the coupon discount applied twice?",
                                       "terms": ["apply_coupon"]}))

    written, recalled = run(shop, body)
    assert "created gotcha-coupons-apply-after-the-cart-total-is-computed" in written
    assert "created decision-discounts-are-percentages-never-fixed-amounts" in written
    note = shop / ".loremap/notes/gotcha-coupons-apply-after-the-cart-total-is-computed.md"
    assert "source: agent" in note.read_text(encoding="utf-8")
    assert recalled.startswith("[gotcha] Coupons apply after the cart total is computed")
    assert "why:" in recalled
    assert "Open one with the read tool" in recalled


def test_recall_says_when_nothing_relevant_is_known(shop):
    async def body(c: Client) -> str:
        await ok(c, "remember", {"facts": FACTS})
        return await ok(c, "recall", {"query": "kubernetes helm chart ingress annotations"})

    assert run(shop, body).startswith("nothing relevant in memory (")


def test_recall_filters_and_budget_are_applied(shop):
    async def body(c: Client) -> tuple[str, str, str]:
        await ok(c, "map", {})
        await ok(c, "remember", {"facts": FACTS})
        return (await ok(c, "recall", {"query": "coupon discount", "types": ["decision"]}),
                await ok(c, "recall", {"query": "coupon discount", "kind": "file"}),
                await fails(c, "recall", {"query": "coupon", "as_of": "last week"}))

    decisions, files, bad_date = run(shop, body)
    assert "[decision]" in decisions and "[gotcha]" not in decisions
    assert "[file]" in files and "[gotcha]" not in files
    assert "YYYY-MM-DD" in bad_date


def test_remember_warns_of_a_similar_note_and_reports_what_it_superseded(shop):
    again = {"type": "gotcha", "title": "Coupons apply after the cart total",
             "body": "Same lesson, said again."}
    replacement = {"type": "decision", "title": "Discounts may be fixed amounts with a floor",
                   "body": "A fixed amount never takes the total under 1.",
                   "supersedes": "decision-discounts-are-percentages-never-fixed-amounts"}

    async def body(c: Client) -> tuple[str, str]:
        await ok(c, "remember", {"facts": FACTS})
        return (await ok(c, "remember", {"facts": [again]}),
                await ok(c, "remember", {"facts": [replacement]}))

    similar, superseded = run(shop, body)
    assert ("warning: a similar note exists: "
            "gotcha-coupons-apply-after-the-cart-total-is-computed") in similar
    assert ("updated decision-discounts-are-percentages-never-fixed-amounts: superseded by "
            "decision-discounts-may-be-fixed-amounts-with-a-floor") in superseded


def test_a_secret_in_any_fact_refuses_the_whole_batch_naming_the_field(shop):
    leaky = {"type": "procedure", "title": "Deploy", "body": f"step one\nexport GH={TOKEN}\n"}

    async def body(c: Client) -> str:
        return await fails(c, "remember", {"facts": [FACTS[0], leaky]})

    message = run(shop, body)
    assert "facts[1].body line 2" in message and "GitHub" in message
    assert TOKEN not in message
    assert not list((shop / ".loremap" / "notes").glob("*.md"))


def test_remember_outside_a_project_says_to_run_init_unless_personal(repo, isolated_home):
    async def body(c: Client) -> tuple[str, str]:
        return (await fails(c, "remember", {"facts": [FACTS[0]]}),
                await ok(c, "remember", {"facts": [{"type": "preference",
                                                    "title": "Answer in British English",
                                                    "body": "Colour, not color."}],
                                         "personal": True}))

    refused, personal = run(repo, body)
    assert "loremap init" in refused
    assert "created preference-answer-in-british-english" in personal
    assert list((isolated_home / "loremap" / "personal" / "notes").glob("*.md"))


# --- read, map, related, forget, handoff -----------------------------------------------------

def test_read_opens_a_note_a_file_or_a_module_and_refuses_what_is_none(shop):
    async def body(c: Client) -> list[str]:
        await ok(c, "map", {})
        await ok(c, "remember", {"facts": FACTS})
        return [await ok(c, "read", {"target": FACTS_ID}),
                await ok(c, "read", {"target": "src/shop/cart.py"}),
                await ok(c, "read", {"target": "src/shop"}),
                await fails(c, "read", {"target": "../../etc/passwd"}),
                await fails(c, "read", {"target": "no-such-note"})]

    note, file, module, escape, missing = run(shop, body)
    assert note.startswith(f"# .loremap/notes/{FACTS_ID}.md") and "Linked from:" in note
    assert file.startswith("# src/shop/cart.py") and "cart_total" in file
    assert "Imports:" in file and "src/shop/discount.py" in file
    assert "src/shop" in module
    assert "'../../etc/passwd' is outside the repository" in escape and "root:" not in escape
    assert "nothing named 'no-such-note'" in missing


FACTS_ID = "gotcha-coupons-apply-after-the-cart-total-is-computed"


def test_map_gives_the_whole_map_or_one_module(shop):
    async def body(c: Client) -> tuple[str, str, str]:
        return (await ok(c, "map", {}), await ok(c, "map", {"module": "src/shop"}),
                await fails(c, "map", {"module": "src/nowhere"}))

    whole, module, missing = run(shop, body)
    assert whole.startswith("# Map of repo") and "src/shop/" in whole
    assert "cart.py" in module
    assert "no module src/nowhere" in missing


def test_related_lists_the_links_of_a_note_and_of_a_file(shop):
    async def body(c: Client) -> tuple[str, str, str]:
        await ok(c, "map", {})
        await ok(c, "remember", {"facts": FACTS})
        return (await ok(c, "related", {"target": FACTS_ID}),
                await ok(c, "related", {"target": "src/shop/cart.py"}),
                await fails(c, "related", {"target": "src/none.py"}))

    of_note, of_file, nothing = run(shop, body)
    assert "about src/shop/cart.py" in of_note
    assert "relates (from) decision-discounts-are-percentages-never-fixed-amounts" in of_note
    assert "imports src/shop/discount.py" in of_file
    assert f"about (from) {FACTS_ID}" in of_file
    assert "has no links" in nothing


def test_forget_archives_so_recall_no_longer_serves_it_and_purge_deletes(shop):
    async def body(c: Client) -> tuple[str, str, str, str]:
        await ok(c, "remember", {"facts": FACTS})
        archived = await ok(c, "forget", {"id": FACTS_ID, "reason": "wrong"})
        recalled = await ok(c, "recall", {"query": "coupons apply after the cart total"})
        purged = await ok(c, "forget", {"id": FACTS_ID, "purge": True})
        escape = await fails(c, "forget", {"id": "../notes/x"})
        return archived, recalled, purged, escape

    archived, recalled, purged, escape = run(shop, body)
    assert archived.startswith(f"archived {FACTS_ID}")
    assert FACTS_ID not in recalled
    assert purged.startswith(f"purged {FACTS_ID}")
    assert not (shop / ".loremap/notes" / f"{FACTS_ID}.md").exists()
    assert "invalid note id" in escape


def test_handoff_saves_and_loads_the_open_handoff(shop):
    saved_args = {"action": "save", "goal": "Make coupons stack", "state": "tests written",
                  "decisions": ["percentages only"], "next_steps": ["fix cart_total"],
                  "open_questions": ["rounding?"], "files": ["src/shop/cart.py"]}

    async def body(c: Client) -> tuple[str, str, str, str, str]:
        none = await fails(c, "handoff", {"action": "load"})
        saved = await ok(c, "handoff", saved_args)
        loaded = await ok(c, "handoff", {"action": "load"})
        empty = await fails(c, "handoff", {"action": "save", "goal": "  "})
        escape = await fails(c, "handoff", {"action": "load", "id": "../notes/x"})
        return none, saved, loaded, empty, escape

    none, saved, loaded, empty, escape = run(shop, body)
    assert "../notes/x" in escape
    assert "handoff" in none.lower()
    assert saved.startswith("saved handoff ")
    assert list((shop / ".loremap" / "handoffs").glob("*.md"))
    for expected in ("Make coupons stack", "tests written", "percentages only",
                     "fix cart_total", "rounding?", "src/shop/cart.py"):
        assert expected in loaded
    assert "goal" in empty


def test_timeline_and_stats_in_the_full_catalogue(shop):
    async def body(c: Client) -> tuple[str, str, str]:
        await ok(c, "map", {})
        await ok(c, "remember", {"facts": FACTS})
        return (await ok(c, "timeline", {"commits": 5}), await ok(c, "stats", {}),
                await ok(c, "timeline", {"since": "2999-01-01"}))

    timeline, stats, future = run(shop, body, "full")
    assert "# Notes recorded: 2" in timeline and "Add the shop — " in timeline
    assert "src/shop/cart.py" in timeline
    assert "notes: 2 — decision 1, gotcha 1" in stats and "code files: 4" in stats
    assert "# Notes recorded since 2999-01-01: 0" in future


# --- resources and prompts -------------------------------------------------------------------

def test_resources_serve_the_map_and_module_pages(shop):
    async def body(c: Client) -> tuple[list[str], str, str]:
        await ok(c, "map", {})
        listed = [str(r.uri) for r in (await c.list_resources()).resources]
        whole = (await c.read_resource("loremap://map")).contents[0]
        module = (await c.read_resource("loremap://module/src--shop")).contents[0]
        with pytest.raises(MCPError):
            await c.read_resource("loremap://secrets")
        assert isinstance(whole, types.TextResourceContents)
        assert isinstance(module, types.TextResourceContents)
        return listed, whole.text, module.text

    listed, whole, module = run(shop, body)
    assert "loremap://map" in listed and "loremap://module/src--shop" in listed
    assert whole.startswith("# Map of repo")
    assert "cart.py" in module


def test_prompts_start_the_record_and_handoff_flows(shop):
    async def body(c: Client) -> tuple[list[str], str, str]:
        names = [p.name for p in (await c.list_prompts()).prompts]
        record = (await c.get_prompt("record", {"topic": "coupons"})).messages[0].content
        handoff = (await c.get_prompt("handoff")).messages[0].content
        with pytest.raises(MCPError):
            await c.get_prompt("record", {"topik": "x"})
        assert isinstance(record, types.TextContent) and isinstance(handoff, types.TextContent)
        return names, record.text, handoff.text

    names, record, handoff = run(shop, body)
    assert names == ["record", "handoff"]
    assert "`remember`" in record and "about coupons" in record
    assert "`handoff`" in handoff and "next_steps" in handoff


# --- projects and a degraded index -----------------------------------------------------------

def test_the_client_roots_choose_the_project(shop, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=shop.as_uri(), name="shop")])

    async def body(c: Client) -> str:
        await ok(c, "remember", {"facts": FACTS})
        return await ok(c, "stats", {})

    stats = run(other, body, "full", mode="legacy", list_roots_callback=roots)
    assert f"project: {shop}" in stats
    assert (shop / ".loremap/notes" / f"{FACTS_ID}.md").exists()


def test_a_corrupt_index_is_rebuilt_and_the_answer_says_it_was_degraded(shop):
    async def seed(c: Client) -> str:
        return await ok(c, "remember", {"facts": FACTS})

    run(shop, seed)
    index = shop / ".loremap" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)

    async def body(c: Client) -> str:
        return await ok(c, "recall", {"query": "coupons apply after the cart total"})

    answer = run(shop, body)
    assert answer.startswith("degraded: the index was unreadable and was rebuilt")
    assert FACTS_ID in answer


def test_an_index_deleted_under_a_running_server_is_rebuilt_on_the_next_call(shop):
    index = shop / ".loremap" / "index.sqlite"

    async def body(c: Client) -> tuple[str, str]:
        await ok(c, "remember", {"facts": FACTS})
        for path in (index, Path(f"{index}-wal"), Path(f"{index}-shm")):
            path.unlink(missing_ok=True)
        first = await ok(c, "recall", {"query": "coupons apply after the cart total"})
        second = await ok(c, "recall", {"query": "coupons apply after the cart total"})
        return first, second

    first, second = run(shop, body)
    assert first.startswith("degraded: the index was missing and was rebuilt from the notes")
    assert FACTS_ID in first
    assert not second.startswith("degraded")
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM nodes WHERE kind = 'note'").fetchone()[0] == 2


def test_forget_erases_through_the_same_path_and_refuses_an_erase_without_a_reason(shop):
    async def body(c: Client) -> tuple[str, str]:
        await ok(c, "remember", {"facts": FACTS})
        refused = await fails(c, "forget", {"id": FACTS_ID, "erase": True})
        erased = await ok(c, "forget", {"id": FACTS_ID, "erase": True, "reason": "leaked"})
        return refused, erased

    refused, erased = run(shop, body)
    assert "--erase needs --reason" in refused
    assert erased.startswith(f"erased {FACTS_ID}")
    assert not (shop / ".loremap/notes" / f"{FACTS_ID}.md").exists()
