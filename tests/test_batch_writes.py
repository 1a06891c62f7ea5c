"""A multi-fact write lands whole or not at all: a failure undoes it in the process, a writer
killed between its renames leaves a journal that `doctor --fix` completes or rolls back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loremap.app import App
from loremap.memory.batch import journals
from loremap.memory.drafts import Draft
from loremap.use.fresh import ALWAYS
from loremap.use.notes import remember
from loremap.vault.layout import Vault

WRITER = Path(__file__).with_name("writer.py")


def vault_of(project: Path) -> Vault:
    return Vault(project / ".loremap", "project", 262144, 5.0)


def files(project: Path) -> dict[str, bytes]:
    notes = project / ".loremap" / "notes"
    return {p.name: p.read_bytes() for p in notes.iterdir()} if notes.is_dir() else {}


def killed_writer(project: Path, renames: int, supersedes: str | None = None) -> None:
    """Run writer.py batch-kill: a three-fact write that dies after `renames` renames."""
    args = [sys.executable, str(WRITER), "batch-kill", str(project), str(renames)]
    proc = subprocess.run([*args, *([supersedes] if supersedes else [])], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def batch_ids(project: Path) -> set[str]:
    return {name.removesuffix(".md") for name in files(project)
            if name.startswith("gotcha-batch-k-fact-")}


def test_a_two_fact_write_lands_both_facts_in_one_go(project):
    with App.open(project) as app:
        done = remember(app, [Draft("gotcha", "Coupons twice", "The total ran first."),
                              Draft("gotcha", "Coupons twice", "Same title, second fact.")],
                        ALWAYS)
        assert [w.id for w in done.notes] == ["gotcha-coupons-twice", "gotcha-coupons-twice-2"]
        assert {n.id for n in app.list_notes([], [])} == {w.id for w in done.notes}
    assert not journals(vault_of(project))


def test_a_fact_may_supersede_one_written_earlier_in_the_same_batch(project):
    with App.open(project) as app:
        done = remember(app, [Draft("decision", "Use cookies", "Sessions in cookies."),
                              Draft("decision", "Use tokens", "Stateless tokens.",
                                    supersedes="decision-use-cookies")], ALWAYS)
        first = app.memory.read("decision-use-cookies")[0].note
    assert first.status.value == "superseded" and first.superseded_by == "decision-use-tokens"
    assert done.notes[1].superseded == "decision-use-cookies"


def test_a_failing_rename_in_a_batch_leaves_no_fact_and_no_journal(project, monkeypatch):
    before = files(project)
    real_replace = os.replace

    def failing(src, dst):
        if Path(dst).name == "gotcha-second-fact.md":
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    with App.open(project) as app:
        monkeypatch.setattr(os, "replace", failing)
        with pytest.raises(OSError, match="No space left"):
            remember(app, [Draft("gotcha", "First fact", "One."),
                           Draft("gotcha", "Second fact", "Two.")], ALWAYS)
        monkeypatch.setattr(os, "replace", real_replace)
        assert app.list_notes([], []) == []
    assert files(project) == before


def test_a_writer_killed_between_renames_is_completed_by_doctor_fix(project, cli):
    killed_writer(project, 1)
    assert len(batch_ids(project)) == 1  # the crash left one fact of three
    report = json.loads(cli("doctor", "--json").out)
    batch = [f for f in report["findings"] if f["check"] == "batch"]
    assert not report["ok"] and len(batch) == 1
    assert "1 of 3 had landed" in batch[0]["message"]
    assert batch[0]["message"].endswith("`loremap doctor --fix` completes it")
    fixed = json.loads(cli("doctor", "--fix", "--json").out)
    assert [f["message"].endswith("; completed") for f in fixed["findings"]
            if f["check"] == "batch"] == [True]
    assert batch_ids(project) == {f"gotcha-batch-k-fact-{k}" for k in range(3)}
    assert json.loads(cli("doctor", "--json").out)["ok"]
    listed = {n["id"] for n in json.loads(cli("list", "--json").out)["notes"]}
    assert listed == batch_ids(project)


def test_a_batch_whose_temp_file_is_gone_is_rolled_back_with_the_superseded_note(project,
                                                                                 cli):
    assert cli("remember", "-t", "gotcha", "--title", "Old advice", "-m", "Do X.").code == 0
    before = files(project)
    killed_writer(project, 2, "gotcha-old-advice")  # fact 0 and the rewritten old note landed
    assert b"status: superseded" in files(project)["gotcha-old-advice.md"]
    for tmp in vault_of(project).temp_files():
        if tmp.name.startswith(".gotcha-batch-k-fact-2.md."):
            tmp.unlink()
    report = json.loads(cli("doctor", "--json").out)
    assert any(f["check"] == "batch" and "rolls it back" in f["message"]
               for f in report["findings"])
    assert cli("doctor", "--fix").code == 0
    assert files(project) == before  # the old note's bytes as they were, no fact of the batch
    assert json.loads(cli("doctor", "--json").out)["ok"]


def test_an_unreadable_or_forged_journal_moves_no_file(project, cli):
    notes = project / ".loremap" / "notes"
    assert cli("remember", "-t", "gotcha", "--title", "Kept", "-m", "Body.").code == 0
    (notes / ".batch-1.tmp").write_text("{not json", encoding="utf-8")
    forged = {"version": 1, "files": [{"id": "gotcha-kept", "temp": "../../../x",
                                       "hash": "0", "before": None}]}
    (notes / ".batch-2.tmp").write_text(json.dumps(forged), encoding="utf-8")
    report = json.loads(cli("doctor", "--json").out)
    messages = [f["message"] for f in report["findings"] if f["check"] == "batch"]
    assert len(messages) == 2 and all("unreadable batch journal" in m for m in messages)
    assert cli("doctor", "--fix").code == 0
    assert set(files(project)) == {"gotcha-kept.md"}
