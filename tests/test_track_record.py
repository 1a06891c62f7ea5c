"""Procedures with a track record: `loremap outcome` and the MCP `outcome` tool count into the
note's frontmatter, and recall ranks procedures by the Wilson lower bound of their success."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from mcp import Client

from conftest import run_cli_process
from loremap.cli.parser import OUTCOMES
from loremap.search.track import factor, lower_bound
from loremap.store.sqlite import schema
from loremap.use import notes
from loremap.vault.frontmatter import parse_note

DEPLOY = ("Deploy the payments service", "Build the image, push it, roll the pods one by one.")


def remember_procedure(cli, title: str, body: str) -> str:
    result = cli("remember", "-t", "procedure", "--title", title, "-m", body, "--json")
    assert result.code == 0, result.err
    return str(json.loads(result.out)["id"])


def count(cli, note_id: str, result: str, times: int = 1) -> None:
    for _ in range(times):
        done = cli("outcome", note_id, result)
        assert done.code == 0, done.err


def ranked(cli, *query: str) -> list[dict[str, object]]:
    result = cli("search", *query, "--json", "--limit", "50", "--budget", "0")
    assert result.code == 0, result.err
    return list(json.loads(result.out)["items"])


def test_the_wilson_bound_of_the_issue_and_what_it_multiplies():
    assert round(lower_bound(1, 0), 2) == 0.21 and round(lower_bound(47, 3), 2) == 0.84
    assert lower_bound(0, 0) == 0.0 and factor(0, 0) == 1.0 and factor(25, 25) == 1.0
    assert factor(1, 0) < factor(47, 3) < factor(99, 1) < 2
    assert 0.5 < factor(0, 50) < factor(0, 5) < factor(1, 4) < 1
    assert factor(47, 3, weight=0) == 1.0
    assert OUTCOMES == notes.OUTCOMES


def test_an_outcome_is_counted_in_the_frontmatter_with_its_dated_line(project, cli):
    note_id = remember_procedure(cli, *DEPLOY)
    count(cli, note_id, "success")
    done = cli("outcome", note_id, "failure", "-m", "the health check\ntimed out", "--json")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert (data["successes"], data["failures"]) == (1, 1)
    assert data["lower_bound"] == pytest.approx(lower_bound(1, 1), abs=1e-4)
    text = (project / ".loremap" / "notes" / f"{note_id}.md").read_text(encoding="utf-8")
    note = parse_note(text, "n.md")
    assert (note.successes, note.failures) == (1, 1)
    assert note.body.endswith("## Outcomes\n- " + note.recorded_at[:10]
                              + " failure: the health check timed out")
    count(cli, note_id, "success")
    again = parse_note((project / ".loremap" / "notes" / f"{note_id}.md").read_text(
        encoding="utf-8"), "n.md")
    assert again.body == note.body and (again.successes, again.failures) == (2, 1)
    shown = cli("outcome", note_id, "success")
    assert shown.out.strip().endswith("worked 3 of 4 times reported (lower bound 0.30)")


def test_bad_outcomes_are_refused_in_one_line_and_change_nothing(project, cli):
    note_id = remember_procedure(cli, *DEPLOY)
    decision = cli("remember", "-t", "decision", "--title", "Pods roll one by one", "-m",
                   "So a bad image never takes the service down.", "--json")
    other = json.loads(decision.out)["id"]
    folder = project / ".loremap" / "notes"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    cases = [
        (("outcome", "no-such-procedure", "success"), 1, "no note with id 'no-such-procedure'"),
        (("outcome", other, "success"), 1, "is a decision: outcomes are recorded on procedures"),
        (("outcome", note_id, "maybe"), 2, "invalid choice: 'maybe'"),
        (("outcome", "../x", "success"), 1, "invalid note id"),
        (("outcome", note_id, "failure", "-m", "x" * 2001), 1, "keep it under 2,000"),
        (("outcome", note_id, "failure", "-m", f"token {token}"), 1, "refused: "),
    ]
    for argv, code, message in cases:
        done = cli(*argv)
        assert done.code == code, (argv, done.err)
        assert message in done.err and done.err.count("\n") == 1, (argv, done.err)
    assert cli("forget", note_id).code == 0
    archived = folder / f"{note_id}.md"
    kept = archived.read_bytes()
    done = cli("outcome", note_id, "success")
    assert done.code == 1 and "is archived: record the outcome on the procedure" in done.err
    assert archived.read_bytes() == kept
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != archived.name} == {
        k: v for k, v in before.items() if k != archived.name}


def test_a_hand_edited_counter_that_is_not_a_number_is_reported_and_skipped(project, cli):
    note_id = remember_procedure(cli, *DEPLOY)
    path = project / ".loremap" / "notes" / f"{note_id}.md"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "source: human\n", "source: human\nsuccesses: lots\n"), encoding="utf-8")
    done = cli("search", "deploy", "payments")
    assert done.code == 0
    assert f"{note_id}.md:" in done.err and "'successes' must be a whole number" in done.err
    refused = cli("outcome", note_id, "success")
    assert refused.code == 1 and "'successes' must be a whole number" in refused.err


def test_two_processes_reporting_at_once_lose_no_count(project, cli):
    note_id = remember_procedure(cli, *DEPLOY)
    script = ("import sys\nfrom loremap.cli import main\n"
              "for _ in range(8):\n"
              "    assert main(['-q', 'outcome', sys.argv[1], sys.argv[2]]) == 0\n")
    runs = [subprocess.Popen([sys.executable, "-c", script, note_id, result], cwd=project)
            for result in ("success", "failure", "success")]
    assert [p.wait(timeout=300) for p in runs] == [0, 0, 0]
    note = parse_note((project / ".loremap" / "notes" / f"{note_id}.md").read_text(
        encoding="utf-8"), "n.md")
    assert (note.successes, note.failures) == (16, 8)
    assert note.body.count("## Outcomes") == 0  # no --note, no section


def test_a_lucky_one_of_one_never_outranks_forty_seven_of_fifty(project, cli):
    # Two procedures equally relevant; whichever the text lists put first, the record decides.
    for first in ("lucky", "proven"):
        names = {"lucky": f"{first}-a", "proven": f"{first}-b"}
        ids = {}
        for who in (("lucky", "proven") if first == "lucky" else ("proven", "lucky")):
            ids[who] = remember_procedure(
                cli, f"Restart the queue workers ({names[who]})",
                "Drain the queue, stop the workers, start them again.")
        count(cli, ids["lucky"], "success")
        path = project / ".loremap" / "notes" / f"{ids['proven']}.md"
        path.write_text(path.read_text(encoding="utf-8").replace(
            "source: human\n", "source: human\nsuccesses: 47\nfailures: 3\n"), encoding="utf-8")
        order = [item["id"] for item in ranked(cli, "restart", "the", "queue", "workers")
                 if item["id"] in ids.values()]
        assert order == [ids["proven"], ids["lucky"]], (first, order)
        for note_id in ids.values():
            assert cli("forget", note_id, "--purge").code == 0


def test_recall_orders_procedures_by_their_known_success_rates(project, cli):
    rng = random.Random(20261203)
    rates = [i / 11 for i in range(12)]
    rng.shuffle(rates)
    ids = []
    for n, rate in enumerate(rates):
        note_id = remember_procedure(cli, f"Rotate the signing keys, variant {n}",
                                     "Create the new key, publish it, retire the old one.")
        successes = sum(rng.random() < rate for _ in range(40))
        path = project / ".loremap" / "notes" / f"{note_id}.md"
        path.write_text(path.read_text(encoding="utf-8").replace(
            "source: human\n", f"source: human\nsuccesses: {successes}\n"
                               f"failures: {40 - successes}\n"), encoding="utf-8")
        ids.append(note_id)
    items = ranked(cli, "rotate", "the", "signing", "keys")
    order = [item["id"] for item in items if item["id"] in ids]
    assert len(order) == len(ids)
    true_rank = {note_id: -rates[n] for n, note_id in enumerate(ids)}
    got = [true_rank[i] for i in order]
    rho = spearman(list(range(len(got))), sorted(range(len(got)), key=lambda k: got[k]))
    print(f"Spearman correlation of the recalled order with the true success rate: {rho:.3f}")
    assert rho >= 0.9, (rho, order)
    why = next(item for item in items if item["id"] == order[0])["why"]
    assert any(w.startswith("worked ") and w.endswith("(ranked up)") for w in why), why


def spearman(xs: list[int], ys: list[int]) -> float:
    """Spearman's rho of two rankings without ties (1: the same order)."""
    n = len(xs)
    position = {y: i for i, y in enumerate(ys)}
    d2 = sum((x - position[x]) ** 2 for x in xs)
    return 1 - 6 * d2 / (n * (n * n - 1))


def test_being_read_and_recalled_counts_nothing(project, cli):
    body = "Run the rebuild, then check the counts."
    quiet = remember_procedure(cli, "Rebuild the search index after a crash", body)
    loud = remember_procedure(cli, "Rebuild the search index after an upgrade", body)
    before = [i["id"] for i in ranked(cli, "rebuild", "search", "index")]
    assert before.index(quiet) < before.index(loud)  # tied: the first id first
    for _ in range(5):
        assert cli("show", loud).code == 0
        assert cli("search", "rebuild", "the", "index").code == 0
    assert [i["id"] for i in ranked(cli, "rebuild", "search", "index")] == before
    count(cli, quiet, "failure", 5)
    after = [i["id"] for i in ranked(cli, "rebuild", "search", "index")]
    assert after.index(quiet) > after.index(loud)


def test_an_agent_reports_an_outcome_through_the_mcp_tool(project, cli):
    import anyio

    from loremap.mcp.projects import Projects
    from loremap.mcp.server import build_server

    note_id = remember_procedure(cli, *DEPLOY)
    out: list[tuple[str, bool, str, bool, str]] = []

    async def main() -> None:
        async with Client(build_server(Projects(project), "lean")) as c:
            ok = await c.call_tool("outcome", {"id": note_id, "result": "success",
                                               "note": "rolled out in four minutes"})
            bad = await c.call_tool("outcome", {"id": note_id, "result": "perhaps"})
            recalled = await c.call_tool("recall", {"query": "deploy the payments service"})
            out.append((ok.content[0].text, ok.is_error, bad.content[0].text, bad.is_error,
                        recalled.content[0].text))

    anyio.run(main)
    ok_text, ok_error, bad_text, bad_error, recalled = out[0]
    assert not ok_error and ok_text == f"success counted for {note_id}: worked 1 of 1 times " \
                                       "reported"
    assert bad_error and "perhaps" in bad_text
    assert "worked 1 of 1 times reported (ranked up)" in recalled
    note = parse_note((project / ".loremap" / "notes" / f"{note_id}.md").read_text(
        encoding="utf-8"), "n.md")
    assert note.successes == 1 and "success: rolled out in four minutes" in note.body


def test_an_index_of_the_previous_schema_is_migrated_and_an_edited_note_counts(project, cli,
                                                                               tmp_path):
    import sqlite3

    note_id = remember_procedure(cli, *DEPLOY)
    index = project / ".loremap" / "index.sqlite"
    with sqlite3.connect(index) as conn:  # back to schema 4, as the last release left it
        conn.execute("DROP INDEX nodes_signature")
        conn.execute("DROP INDEX nodes_command")
        for column in ("successes", "failures", "signature", "remedy", "command"):
            conn.execute(f"ALTER TABLE nodes DROP COLUMN {column}")
        conn.execute("DELETE FROM migrations WHERE version >= 5")  # (6 changed nothing)
        rows = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    path = project / ".loremap" / "notes" / f"{note_id}.md"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "source: human\n", "source: human\nsuccesses: 9\n"), encoding="utf-8")
    done = run_cli_process("search", "deploy", "payments", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    item = next(i for i in json.loads(done.stdout)["items"] if i["id"] == note_id)
    assert "worked 9 of 9 times reported (ranked up)" in item["why"]
    with sqlite3.connect(index) as conn:  # migrated in place, not rebuilt
        version = conn.execute("SELECT max(version) FROM migrations").fetchone()[0]
        assert version == len(schema.MIGRATIONS)
        assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == rows
