"""`loremap import cuba`: a bundle and a database the real cuba-memorys wrote, through the one
import path (tests/test_import_cuba.py builds them and checks the readers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("loremap.imports.cuba",
                    reason="the cuba-memorys reader (imports/cuba.py) is not in this tree")
made = pytest.importorskip("test_import_cuba")
made_v2 = made.made_v2
SECRET = made.SECRET
pytestmark = pytest.mark.postgres


def test_a_cuba_bundle_imports_and_a_second_import_changes_nothing(made_v2, project: Path,
                                                                   cli) -> None:
    done = cli("import", "cuba", "--bundle", str(made_v2.bundle), "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["counts"]["new"] > 5, report
    texts = "".join(p.read_text(encoding="utf-8")
                    for p in (project / ".loremap" / "notes").glob("*.md"))
    assert SECRET not in texts and "source: import:cuba" in texts
    # The ledger's entity holds an observation with a token: quarantined, out of search.
    ledger = next(n for n in report["notes"] if n["title"] == "Ledger")
    assert "status: quarantined" in (project / ".loremap" / "notes" / f"{ledger['id']}.md"
                                     ).read_text(encoding="utf-8")
    found = json.loads(cli("search", "payments API async idempotent endpoints", "--json").out)
    assert "concept-payments-api" in [item["id"] for item in found["items"]], found
    doctor = json.loads(cli("doctor", "--json").out)
    problems = [f for f in doctor["findings"] if f["level"] in ("error", "warning")
                and f["check"] not in ("wiring", "daemon")]
    assert not problems, problems
    again = json.loads(cli("import", "cuba", "--bundle", str(made_v2.bundle), "--json").out)
    assert again["counts"]["new"] == again["counts"]["updated"] == 0
    db = json.loads(cli("import", "cuba", "--database", made_v2.database, "--json").out)
    assert db["counts"]["new"] == 0, db
