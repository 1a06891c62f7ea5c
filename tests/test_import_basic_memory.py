"""`loremap import basic-memory`: a project written by the real basic-memory (installed from
PyPI, driven through its own MCP server's `write_note`, as an agent writes), then imported:
notes, tags, links, aliases, search, doctor, and a second import that changes nothing."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from loremap.vault.frontmatter import parse_note
from pypi_tools import pypi_tool

pytestmark = pytest.mark.slow

NOTES = [
    ("Coffee Brewing Methods", "note", ["coffee", "drinks"],
     "Brewing notes for the office machine.\n\n## Observations\n"
     "- [method] Pour over gives a cleaner cup #brewing\n"
     "- [tip] Grind the beans just before brewing #grinding\n\n## Relations\n"
     "- relates_to [[Coffee Bean Origins]]\n- requires [[Burr Grinder]]\n"),
    ("Coffee Bean Origins", "note", ["coffee"],
     "Where the beans come from.\n\n## Observations\n"
     "- [origin] Ethiopian beans taste of blueberries #ethiopia\n"),
    ("Decaf only after noon", "decision", ["coffee"],
     "The team agreed: after noon the machine serves decaf only.\n\n## Relations\n"
     "- about [[Coffee Brewing Methods]]\n"),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A basic-memory project folder, written by basic-memory itself."""
    tool = pypi_tool("basic-memory") / "basic-memory"
    root = tmp_path_factory.mktemp("bm")
    folder, home = root / "project", root / "home"
    folder.mkdir()
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LOREMAP_", "BASIC_MEMORY_"))}
    env.update(HOME=str(home), BASIC_MEMORY_HOME=str(folder), NO_COLOR="1")
    # One server for the three notes: each start of basic-memory (its CLI's `tool write-note`
    # too, which calls the same tool function) takes ~13 s here, building its web app.
    log = root / "server.log"
    try:
        anyio.run(_write_notes, tool, env, folder, log)
    except Exception as exc:  # the server's own words say why it failed
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else ""
        raise AssertionError(f"basic-memory could not write the notes: {exc!r}\n{tail}") from exc
    assert len(list((folder / "notes").glob("*.md"))) == len(NOTES)
    return folder


async def _write_notes(tool: Path, env: dict[str, str], folder: Path, log: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(tool), args=["mcp"], env=env, cwd=str(folder))
    with log.open("w", encoding="utf-8") as errors, anyio.fail_after(600):
        async with stdio_client(params, errlog=errors) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            for title, kind, tags, content in NOTES:
                result = await session.call_tool("write_note", {
                    "title": title, "content": content, "directory": "notes",
                    "tags": tags, "note_type": kind})
                text = "".join(getattr(part, "text", "") for part in result.content)
                assert not result.is_error, text


@pytest.fixture
def source(written: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bm-project"
    shutil.copytree(written, copy, symlinks=True)
    return copy


def imported(cli: Callable[..., object], *args: str) -> dict:  # type: ignore[type-arg]
    result = cli("import", "basic-memory", *args, "--json")
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    return json.loads(result.out)  # type: ignore[attr-defined,no-any-return]


def notes(project: Path) -> dict[str, object]:
    return {p.stem: parse_note(p.read_text(encoding="utf-8"), p.name)
            for p in (project / ".loremap" / "notes").glob("*.md")}


def test_a_basic_memory_project_becomes_notes_tags_and_links(project: Path, cli, source: Path
                                                             ) -> None:
    report = imported(cli, str(source))
    assert report["counts"]["new"] == 3
    assert report["counts"]["type:concept"] == 2 and report["counts"]["type:decision"] == 1
    found = notes(project)
    brewing = found["concept-coffee-brewing-methods"]
    origins = found["concept-coffee-bean-origins"]
    decaf = found["decision-decaf-only-after-noon"]
    assert brewing.source.value == "import" and brewing.origin_tool == "basic-memory"
    assert brewing.origin.endswith("coffee-brewing-methods")
    assert brewing.origin in brewing.aliases  # the permalink finds the note
    assert {"coffee", "drinks", "brewing", "grinding", "note"} <= set(brewing.tags)
    assert "Pour over gives a cleaner cup" in brewing.body
    assert "## Relations" not in brewing.body
    assert [(link.rel.value, link.target) for link in brewing.links] == [
        ("relates", "concept-coffee-bean-origins")]
    assert [(link.rel.value, link.target) for link in decaf.links] == [
        ("about", "concept-coffee-brewing-methods")]
    assert "ethiopia" in origins.tags
    # The relation to an entity the project does not have is reported, the note imported.
    reasons = [s["reason"] for s in report["skipped"]]
    assert any("Burr Grinder" in r for r in reasons), reasons


def test_search_show_doctor_and_a_second_import(project: Path, cli, source: Path) -> None:
    imported(cli, str(source))
    found = cli("search", "Ethiopian beans blueberries", "--json")
    ids = [item["id"] for item in json.loads(found.out)["items"]]
    assert ids and ids[0] == "concept-coffee-bean-origins"
    permalink = notes(project)["concept-coffee-brewing-methods"].origin
    shown = cli("show", permalink)
    assert shown.code == 0 and "concept-coffee-brewing-methods" in shown.out, shown.err
    doctor = json.loads(cli("doctor", "--json").out)
    problems = [f for f in doctor["findings"] if f["level"] in ("error", "warning")
                and f["check"] not in ("wiring", "daemon")]
    assert not problems, problems
    files = {p.name: p.stat().st_mtime_ns for p in (project / ".loremap" / "notes").iterdir()}
    again = imported(cli, str(source))
    assert again["counts"]["unchanged"] == 3 and again["counts"]["new"] == 0
    assert {p.name: p.stat().st_mtime_ns
            for p in (project / ".loremap" / "notes").iterdir()} == files


def test_a_symlink_and_malformed_yaml_in_the_project(project: Path, cli, source: Path,
                                                      tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("---\ntitle: Elsewhere\n---\nnot ours\n", encoding="utf-8")
    os.symlink(outside, source / "notes" / "linked.md")
    (source / "notes" / "broken.md").write_text("---\ntitle: [unclosed\n---\nx\n",
                                                encoding="utf-8")
    report = imported(cli, str(source))
    reasons = {s["where"]: s["reason"] for s in report["skipped"]}
    assert "symlink" in reasons["notes/linked.md"]
    assert "malformed frontmatter" in reasons["notes/broken.md"]
    assert report["counts"]["new"] == 3
