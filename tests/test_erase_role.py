"""`forget --erase` on a shared database secured the way docs/postgres.md says: the owner
migrates and runs `db secure`; both clones connect as the runtime role, which owns no table
and is bound by row-level security. The issue's measurement again (a note with 3 versions,
quoted in a handoff, pulled into two clones, erased, pulled): the command succeeds and says in
one line which VACUUM the owner must run, the chains verify, and a `pg_dump` (as the owner)
and every file of both clones hold none of the note's text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("psycopg")

import psycopg  # noqa: E402

from test_erase import (  # noqa: E402
    TITLE,
    WORDS,
    body,
    edit_body,
    files_under,
    found_in,
    pg_dump,
    quoted_in_both,
)
from test_store_contract import migrated, secured  # noqa: E402
from test_sync import PROJECT, Machine, edit, sql  # noqa: E402

# The one line `compact` gives a role that does not own the tables: the statements it names.
OWNER_RUNS = re.compile(r"`(VACUUM [^`]+)`")


def in_statistics(owner: str) -> list[str]:
    """The tables whose planner statistics (`pg_stats`, as the owner) hold a word of the note
    or its title."""
    words = [*(w[:8] for w in WORDS), TITLE.lower()]
    return [t for (t,) in sql(owner, "SELECT DISTINCT tablename FROM pg_stats WHERE "
                                     "lower(concat(most_common_vals::text, "
                                     "histogram_bounds::text)) LIKE ANY (%s)",
                              ([f"%{w}%" for w in words],))]


def relation_files(owner: str) -> list[Path]:
    """Every file of every relation of the database (tables, indexes, TOAST, the catalogs),
    after a CHECKPOINT has written the shared buffers out."""
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        (data,) = conn.execute("SHOW data_directory").fetchone()
        rows = conn.execute("SELECT pg_relation_filepath(oid) FROM pg_class WHERE "
                            "relkind IN ('r', 'i', 't', 'm') AND "
                            "pg_relation_filepath(oid) IS NOT NULL").fetchall()
    if not os.access(data, os.R_OK | os.X_OK):
        pytest.skip(f"the server's data directory {data} is not readable here (a server of "
                    "LOREMAP_TEST_DATABASE_URL elsewhere, or another user's): its files cannot "
                    "be searched")
    files = [f for (rel,) in rows for f in Path(data).glob(f"{rel}*") if f.is_file()]
    assert len(files) > 50, files  # the catalogs alone: a search of nothing proves nothing
    return files


def test_an_erasure_by_the_runtime_role_leaves_nothing_and_names_the_owner_s_vacuum(
        pg_url: str, app_role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    owner = migrated(pg_url)
    runtime = secured(owner, app_role)
    a, b = (Machine(tmp_path / name, runtime, PROJECT, monkeypatch, capsys)
            for name in ("a", "b"))
    kept = a.remember("Sessions are stateless", "Tokens are checked by signature only.")
    note_id = a.remember(TITLE, body(0))
    path = a.notes / f"{note_id}.md"
    for version in (1, 2, 3):
        edit_body(path, body(version - 1), body(version))
        edit(a.notes / f"{kept}.md", f"\nRevised ({version}).\n")  # (versions of another)
        a.ok("sync", "push")
    assert len(sql(owner, "SELECT 1 FROM note_versions WHERE project = %s AND id = %s",
                   (PROJECT, note_id))) == 3
    b.ok("sync", "pull")
    quoted_in_both(a, b, body(3))
    homes = [a.home, b.home, Path(os.environ["LOREMAP_HOME"])]
    everything = [*files_under(a.root / ".loremap", b.root / ".loremap", *homes)]
    assert len(found_in(everything, pg_dump(owner))) == len(WORDS) + 1  # (all seen before)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("ANALYZE")  # as loremap does after a bulk write, and autovacuum
    assert set(in_statistics(owner)) >= {"note_versions", "postings"}
    assert sql(runtime, "SELECT current_user, rolbypassrls FROM pg_roles "
                        "WHERE rolname = current_user") == [(app_role, False)]

    erased = a.json("forget", note_id, "--erase", "--reason", "a leaked procedure")
    pulled = b.json("sync", "pull")

    assert erased["action"] == "erased" and not path.exists()
    (warning,) = erased["warnings"]  # one line: why no VACUUM ran, and what the owner runs
    assert "this role does not own loremap's tables" in warning and "\n" not in warning
    assert [(c["id"], c["change"]) for c in pulled["changes"]] == [(note_id, "deleted")]
    assert not (b.notes / f"{note_id}.md").exists()
    assert found_in(files_under(a.root / ".loremap", b.root / ".loremap", *homes),
                    pg_dump(owner)) == {}
    (tomb,) = sql(owner, "SELECT text, deleted, erased FROM note_docs WHERE project = %s "
                         "AND id = %s", (PROJECT, note_id))
    assert tomb == ("", True, True)
    for table in ("note_versions", "nodes", "postings", "vectors"):
        assert sql(owner, f"SELECT count(*) FROM {table} WHERE project = %s AND "  # noqa: S608
                          f"{'id' if table != 'postings' else 'node'} = %s",
                   (PROJECT, note_id)) == [(0,)]
    ops = [op for (op,) in sql(owner, "SELECT op FROM audit_log WHERE project = %s AND "
                                      "note = %s ORDER BY seq", (PROJECT, note_id))]
    assert ops[-2:] == ["erase", "erase"]  # a's erasure, then b's own on its pull
    payloads = sql(owner, "SELECT count(*) FROM audit_payloads p JOIN audit_log r USING "
                      "(project, seq) WHERE r.project = %s AND r.note = %s AND r.op <> 'erase'",
               (PROJECT, note_id))
    assert payloads == [(0,)]  # the runtime role deleted its records' payloads
    for clone in (a, b):
        verify = clone.json("audit", "verify")
        assert verify["ok"] and verify["erased"] >= 1
    assert b.json("sync", "push")["changes"] == []  # nothing comes back
    # The runtime role had loremap's index tables and the audit payloads analyzed again (the
    # owner's function, migration 8).
    assert in_statistics(owner) == []

    # The VACUUM the line names is one the owner can run as written.
    with psycopg.connect(owner, autocommit=True) as conn:
        for statement in OWNER_RUNS.findall(warning):
            conn.execute(statement)
    assert found_in(relation_files(owner)) == {}  # not in any page of any table or index
    assert a.json("audit", "verify")["ok"]

