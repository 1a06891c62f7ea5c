"""`loremap slim FILE`: long reference sections of an instruction file move into notes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).with_name("fixtures") / "slim"
CLAUDE = (FIXTURES / "CLAUDE.md").read_bytes().decode("utf-8")
# The repository files the fixture mentions, so that notes can name them.
FILES = ["src/ledgerly/api/routes.py", "src/ledgerly/api/webhooks.py",
         "src/ledgerly/billing/invoice.py", "src/ledgerly/ledger/__init__.py",
         "src/ledgerly/tasks/exports.py", "tests/conftest.py", "tests/factories.py", "Makefile",
         "docs/adr/README.md", "migrations/env.py"]
AWS_KEY = "AKIA4Q7ZRN2KX8WLM3PD"


@pytest.fixture
def ledgerly(repo, cli):
    """The repository of the fixture's project, with loremap initialised and its CLAUDE.md."""
    for rel in FILES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("# placeholder\n", encoding="utf-8")
    (repo / "CLAUDE.md").write_bytes(CLAUDE.encode("utf-8"))
    assert cli("init").code == 0
    return repo


def notes(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".loremap" / "notes").glob("*.md"))


def proposal(cli, *args: str) -> dict:
    result = cli("slim", *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def rows(data: dict) -> dict[str, dict]:
    return {row["heading"]: row for row in data["sections"]}


def test_the_proposal_lists_each_section_with_its_tokens_plan_and_reason(ledgerly, cli):
    result = cli("slim", "CLAUDE.md")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["section", "tokens", "plan", "type", "reason"]
    by_name = {line.strip().split("  ")[0]: line for line in lines[1:] if line.strip()}
    assert "keep" in by_name["# Ledgerly"] and "the title always stays" in by_name["# Ledgerly"]
    assert re.search(r"keep\s+mostly rules \(\d+ %\)", by_name["## Rules"])
    assert re.search(r"move\s+concept\s+reference: prose \d+ %, tables \d+ % -> "
                     r"concept-architecture", by_name["## Architecture"])
    assert re.search(r"move\s+procedure\s+reference: code", by_name["## Commands"])
    assert re.search(r"move\s+gotcha\s+reference: prose", by_name["## Troubleshooting"])
    assert "keep" in by_name["## Code style"] and "short" in by_name["## Code style"]
    assert "decided per subsection" in by_name["## Testing"]
    assert re.search(r"move\s+concept\s+.*-> concept-testing-fixtures-reference",
                     by_name["### Fixtures reference"])
    summary = re.search(r"^([\d,]+) → ([\d,]+) tokens in every message \(−(\d+) %\)$",
                        result.out, re.MULTILINE)
    assert summary is not None
    before, after = (int(summary.group(i).replace(",", "")) for i in (1, 2))
    assert after < before / 2 and int(summary.group(3)) == round((before - after) * 100 / before)
    assert "would write 4 notes: concept-architecture, procedure-commands, " \
           "concept-testing-fixtures-reference, gotcha-troubleshooting" in result.out
    assert "--apply" in result.out


def test_without_apply_nothing_is_written(ledgerly, cli):
    before = notes(ledgerly)
    assert cli("slim", "CLAUDE.md").code == 0
    assert notes(ledgerly) == before
    assert (ledgerly / "CLAUDE.md").read_text(encoding="utf-8") == CLAUDE
    assert not list(ledgerly.glob("CLAUDE.md.loremap-backup*"))


def test_json_gives_the_proposal_as_data(ledgerly, cli):
    data = proposal(cli, "CLAUDE.md")
    assert data["applied"] is False and data["backup"] is None and data["written"] == []
    assert data["tokens_before"] > data["tokens_after"] > 0
    assert data["saving_percent"] == round(
        (data["tokens_before"] - data["tokens_after"]) * 100 / data["tokens_before"])
    sections = rows(data)
    arch = sections["## Architecture"]
    assert arch["action"] == "move" and arch["type"] == "concept"
    assert arch["title"] == "Architecture" and arch["note_id"] == "concept-architecture"
    assert arch["line"] == CLAUDE.splitlines().index("## Architecture") + 1
    assert "src/ledgerly/api/routes.py" in arch["files"]
    assert "src/ledgerly/billing/invoice.py" in arch["files"]
    fixtures = sections["### Fixtures reference"]
    assert fixtures["depth"] == 2 and fixtures["title"] == "Testing: Fixtures reference"
    assert fixtures["files"][:2] == ["tests/conftest.py", "tests/factories.py"]
    assert sections["## Rules"]["action"] == "keep"


def test_apply_writes_the_notes_the_slimmer_file_and_a_backup(ledgerly, cli, golden):
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 0, result.err
    assert "wrote concept-architecture -> .loremap/notes/concept-architecture.md" in result.out
    assert re.search(r"slimmed CLAUDE.md: [\d,]+ → [\d,]+ tokens in every message \(−\d+ %\)",
                     result.out)
    assert "backup: CLAUDE.md.loremap-backup" in result.out
    assert notes(ledgerly) == ["concept-architecture.md", "concept-testing-fixtures-reference.md",
                               "gotcha-troubleshooting.md", "procedure-commands.md"]
    assert (ledgerly / "CLAUDE.md.loremap-backup").read_text(encoding="utf-8") == CLAUDE
    slim = (ledgerly / "CLAUDE.md").read_text(encoding="utf-8")
    golden.check(FIXTURES / "CLAUDE.slim.md", slim)

    note = (ledgerly / ".loremap" / "notes" / "procedure-commands.md").read_text(encoding="utf-8")
    assert "type: procedure" in note and "tags: [slim]" in note and "source: import" in note
    assert "files: [Makefile]" in note
    # The section body verbatim, `#` lines of its code blocks included.
    assert "# install the toolchain and the dependencies (uv, Python 3.12, Node 20)\n" in note
    assert "## database: migrations are Alembic; never edit a merged one\n" in note
    found = cli("search", "webhook signature verification fails with the stripe CLI")
    assert "gotcha-troubleshooting" in found.out


def test_imports_and_loremaps_block_stay_in_the_file_and_out_of_the_notes(ledgerly, cli):
    assert cli("slim", "CLAUDE.md", "--apply").code == 0
    slim = (ledgerly / "CLAUDE.md").read_text(encoding="utf-8")
    assert "\nSee @docs/adr/README.md for the decisions behind this layout.\n" in slim
    block = CLAUDE[CLAUDE.index("<!-- loremap:begin -->"):]
    assert slim.endswith(block)
    arch = (ledgerly / ".loremap" / "notes" / "concept-architecture.md").read_text(
        encoding="utf-8")
    assert "@docs/adr" not in arch and "| `billing` | prices, taxes, invoices |" in arch
    trouble = (ledgerly / ".loremap" / "notes" / "gotcha-troubleshooting.md").read_text(
        encoding="utf-8")
    assert "loremap:begin" not in trouble and "### Celery tasks run twice" in trouble


def test_a_second_run_proposes_nothing(ledgerly, cli):
    assert cli("slim", "CLAUDE.md", "--apply").code == 0
    slimmed = (ledgerly / "CLAUDE.md").read_text(encoding="utf-8")
    data = proposal(cli, "CLAUDE.md")
    assert [r for r in data["sections"] if r["action"] == "move"] == []
    assert rows(data)["## Architecture"]["reason"] == \
        "already in project memory (concept-architecture)"
    assert cli("forget", "procedure-commands", "--purge").code == 0
    assert rows(proposal(cli, "CLAUDE.md"))["## Commands"]["reason"] == \
        "points at procedure-commands, which is not in memory (was the note deleted?)"
    again = cli("slim", "CLAUDE.md", "--apply")
    assert again.code == 0 and "nothing to move" in again.out
    assert (ledgerly / "CLAUDE.md").read_text(encoding="utf-8") == slimmed
    assert len(notes(ledgerly)) == 3
    assert not list(ledgerly.glob("CLAUDE.md.loremap-backup-*"))


def test_headings_inside_code_fences_are_not_sections(ledgerly, cli):
    text = CLAUDE + ("\n## Release\n\n1. Tag the release:\n   ```bash\n   # the tag is the "
                     "version\n   git tag v1.2.3\n   ```\n")
    (ledgerly / "CLAUDE.md").write_text(text, encoding="utf-8")
    headings = [r["heading"] for r in proposal(cli, "CLAUDE.md")["sections"]]
    assert "## database: migrations are Alembic; never edit a merged one" not in headings
    assert not any("install the toolchain" in h or "the tag is" in h for h in headings)
    assert headings[-1] == "## Release"


def test_a_long_section_of_rules_stays(ledgerly, cli):
    rules = rows(proposal(cli, "CLAUDE.md", "--min-tokens", "100"))["## Rules"]
    assert rules["tokens"] >= 300 and rules["action"] == "keep"
    assert rules["reason"].startswith("mostly rules")


def test_min_tokens_sets_how_long_a_section_must_be_to_move(ledgerly, cli):
    data = proposal(cli, "CLAUDE.md", "--min-tokens", "5000")
    assert all(r["action"] == "keep" for r in data["sections"])
    assert data["tokens_after"] == data["tokens_before"]


def test_a_title_that_exists_already_is_pointed_at_not_duplicated(ledgerly, cli):
    made = cli("remember", "--type", "concept", "--title", "architecture", "-m",
               "Ledgerly is a modular monolith.")
    assert made.code == 0, made.err
    arch = rows(proposal(cli, "CLAUDE.md"))["## Architecture"]
    assert arch["existing"] is True and arch["note_id"] == "concept-architecture"
    assert "its text differs: the section's own text stays only in the backup" in arch["reason"]
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 0, result.err
    assert "pointed at the existing note concept-architecture" in result.out
    assert "concept-architecture-2.md" not in notes(ledgerly)
    assert "`loremap show concept-architecture`" in (ledgerly / "CLAUDE.md").read_text(
        encoding="utf-8")


def test_a_secret_in_a_section_to_move_refuses_and_writes_nothing(ledgerly, cli):
    text = CLAUDE.replace("There is no service mesh", f"The staging key is {AWS_KEY}. There is "
                                                       "no service mesh")
    (ledgerly / "CLAUDE.md").write_text(text, encoding="utf-8")
    before = notes(ledgerly)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if AWS_KEY in s)
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 1 and result.out == ""
    assert result.err == (f"loremap: error: refused: AWS access key id in section "
                          f"'## Architecture' (CLAUDE.md:{line}); remove it from the file "
                          "first (secrets never land in the vault)\n")
    assert notes(ledgerly) == before
    assert (ledgerly / "CLAUDE.md").read_text(encoding="utf-8") == text
    assert not list(ledgerly.glob("CLAUDE.md.loremap-backup*"))
    dry = cli("slim", "CLAUDE.md")
    assert dry.code == 0 and "--apply would refuse: refused: AWS access key id" in dry.err


def test_a_section_over_the_note_size_limit_refuses_and_writes_nothing(ledgerly, cli,
                                                                         monkeypatch):
    monkeypatch.setenv("LOREMAP_MAX_NOTE_BYTES", "1500")
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 1
    assert result.err.startswith("loremap: error: section '## Architecture' (CLAUDE.md:")
    assert "over the limit of 1500 (vault.max_note_bytes)" in result.err
    assert result.err.count("\n") == 1
    assert notes(ledgerly) == [] and (ledgerly / "CLAUDE.md").read_text(
        encoding="utf-8") == CLAUDE


def test_a_second_apply_keeps_one_backup_the_file_before_it(ledgerly, cli):
    assert cli("slim", "CLAUDE.md", "--apply").code == 0
    slimmed = (ledgerly / "CLAUDE.md").read_text(encoding="utf-8")
    arch = CLAUDE[CLAUDE.index("## Architecture"):CLAUDE.index("## Commands")]
    before = slimmed + "\n" + arch.replace("## Architecture", "## Payments flow")
    (ledgerly / "CLAUDE.md").write_text(before, encoding="utf-8")
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 0, result.err
    assert (ledgerly / "CLAUDE.md.loremap-backup").read_text(encoding="utf-8") == before
    assert [p.name for p in ledgerly.glob("CLAUDE.md.loremap-backup*")] == [
        "CLAUDE.md.loremap-backup"]
    assert "wrote concept-payments-flow" in result.out


def test_sections_under_several_top_headings_and_crlf_lines_survive(ledgerly, cli):
    body = CLAUDE.split("\n## Architecture\n", 1)[1].split("\n## Commands\n", 1)[0]
    text = ("# Rules\n\n- Never push to main.\n- Always run `make check`.\n\n"
            f"# Architecture\n{body}\n# Style\n\nUse ruff.\n").replace("\n", "\r\n")
    (ledgerly / "AGENTS.md").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    result = cli("slim", "AGENTS.md", "--apply")
    assert result.code == 0, result.err
    data = (ledgerly / "AGENTS.md").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf# Rules\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert (b"# Architecture\r\n\r\nMoved to project memory: `concept-architecture` (loremap "
            b"recalls it when relevant; `loremap show concept-architecture`).\r\n\r\n"
            b"See @docs/adr/README.md") in data
    assert data.endswith(b"# Style\r\n\r\nUse ruff.\r\n")


def test_a_symlinked_instruction_file_stays_a_symlink(ledgerly, cli):
    (ledgerly / "AGENTS.md").symlink_to("CLAUDE.md")
    assert cli("slim", "AGENTS.md", "--apply").code == 0
    assert (ledgerly / "AGENTS.md").is_symlink()
    assert "Moved to project memory" in (ledgerly / "CLAUDE.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: None, "no such file: CLAUDE.md"),
    (lambda p: p.mkdir(), "cannot edit CLAUDE.md: it is a directory"),
    (lambda p: p.write_bytes(b"# Title\n\x00\x01binary"), "it is a binary file"),
    (lambda p: p.write_bytes("# Café\n".encode("latin-1")), "it is not UTF-8 text"),
    (lambda p: p.write_text("# Big\n\n" + "word " * 220_000, encoding="utf-8"),
     "slim reads instruction files up to 1 MiB"),
])
def test_bad_input_is_refused_with_one_line_and_nothing_changes(repo, cli, make, message):
    assert cli("init").code == 0
    target = repo / "CLAUDE.md"
    make(target)
    before = notes(repo)
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("loremap: error: ") and message in result.err
    assert result.err.count("\n") == 1
    assert notes(repo) == before and not list(repo.glob("CLAUDE.md.loremap-backup*"))


def test_outside_a_loremap_project_it_says_to_run_init(repo, cli):
    (repo / "CLAUDE.md").write_text(CLAUDE, encoding="utf-8")
    result = cli("slim", "CLAUDE.md", "--apply")
    assert result.code == 1 and "run `loremap init`" in result.err
    assert (repo / "CLAUDE.md").read_text(encoding="utf-8") == CLAUDE
    assert not (repo / ".loremap").exists()


def test_a_file_outside_the_project_is_refused(ledgerly, cli, tmp_path):
    outside = tmp_path / "elsewhere" / "CLAUDE.md"
    outside.parent.mkdir()
    outside.write_text(CLAUDE, encoding="utf-8")
    result = cli("slim", str(outside), "--apply")
    assert result.code == 1 and "is outside the project" in result.err
    assert outside.read_text(encoding="utf-8") == CLAUDE and notes(ledgerly) == []


def test_the_parser_knows_fences_comments_frontmatter_and_imports():
    from loremap.agents.slim.markdown import CODE, HEADING, OPAQUE, PINNED, TEXT, parse

    text = ("---\n# not a heading: frontmatter\n---\n"
            "# Title\n"
            "````md\n```\n# still code: the fence needs four backticks to close\n```\n````\n"
            "~~~\n```\n## still code: a ``` fence does not close a ~~~ one\n~~~\n"
            "<!--\n## commented out\n-->\n"
            "#hashtag is text\n"
            "Mail me@example.com, ask @alice, see `@src/x.py`.\n"
            "Read @docs/guide.md first.\n"
            "## Section ##\n")
    doc = parse(text)
    kinds = dict(zip((line.rstrip("\n") for line in doc.lines), doc.kinds, strict=True))
    assert kinds["# not a heading: frontmatter"] == OPAQUE
    assert kinds["# still code: the fence needs four backticks to close"] == CODE
    assert kinds["## still code: a ``` fence does not close a ~~~ one"] == CODE
    assert kinds["## commented out"] == OPAQUE
    assert kinds["#hashtag is text"] == TEXT
    assert kinds["Mail me@example.com, ask @alice, see `@src/x.py`."] == TEXT
    assert kinds["Read @docs/guide.md first."] == PINNED
    assert kinds["# Title"] == kinds["## Section ##"] == HEADING
    (title,) = [s for s in doc.sections if s.level == 1]
    assert [c.title for c in title.children] == ["Section"]


def test_a_heading_without_letters_still_gets_a_note_title(ledgerly, cli):
    text = CLAUDE.replace("## Architecture", "## ???")
    (ledgerly / "CLAUDE.md").write_text(text, encoding="utf-8")
    line = text.splitlines().index("## ???") + 1
    section = rows(proposal(cli, "CLAUDE.md"))["## ???"]
    assert section["title"] == f"CLAUDE.md section at line {line}"
    assert section["note_id"] == f"concept-claude-md-section-at-line-{line}"


def test_the_note_type_follows_the_heading(ledgerly, cli):
    prose = CLAUDE.split("\n## Architecture\n", 1)[1].split("\n| module", 1)[0]
    text = "".join(f"## {heading}\n{prose}\n" for heading in (
        "Why we chose PostgreSQL", "Deploying to production", "Known issues", "Domain model"))
    (ledgerly / "GEMINI.md").write_text(text, encoding="utf-8")
    types = {r["heading"]: r["type"] for r in proposal(cli, "GEMINI.md")["sections"]}
    assert types == {"## Why we chose PostgreSQL": "decision",
                     "## Deploying to production": "procedure",
                     "## Known issues": "gotcha", "## Domain model": "concept"}
