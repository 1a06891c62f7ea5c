"""Vectors on the shared PostgreSQL memory, as a team uses it through the CLI and the MCP
server: `embed enable` fills pgvector for the whole project and the personal notes' own index,
a second clone finds them without embedding again, the runtime role of `loremap db secure`
embeds and searches (its HNSW index built by the owner's function), `reembed` rebuilds, and a
recall by meaning gives the same first item as on SQLite."""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import Result, git
from loremap.embed import LOCAL_MODEL
from loremap.search.embed import FILE_WINDOWS
from test_embed_local import NOTES, _long_file

GOTCHA = "gotcha-coupon-applied-twice"
# No word of the question is in any note: only its meaning matches.
QUESTION = "a promo voucher got deducted repeatedly"
ONLY_VECTORS = ("--tuning", "bm25=0,entities=0,ppr=0,sections=0,notes=0,title=0")
SHOP = {"src/shop/cart.py": '"""The cart: lines and totals."""\n\n\ndef cart_total(lines):\n'
                            "    return sum(lines)\n",
        "src/shop/refund.py": '"""Money given back to a customer."""\n\n\ndef refund(x):\n'
                              "    return -x\n"}

Run = Callable[..., Result]


class Machine:
    """One engineer's machine: a working copy and a home (personal vault, models, logs),
    running the real CLI in this process against the database `url` (None: SQLite)."""

    def __init__(self, cli: Run, monkeypatch: pytest.MonkeyPatch, clone: Path, home: Path,
                 url: str | None) -> None:
        self.cli, self.monkeypatch = cli, monkeypatch
        self.clone, self.home, self.url = clone, home, url

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Result:
        with self.monkeypatch.context() as m:
            m.chdir(self.clone)
            m.setenv("LOREMAP_HOME", str(self.home))
            if self.url is None:
                m.delenv("LOREMAP_DATABASE_URL", raising=False)
            else:
                m.setenv("LOREMAP_DATABASE_URL", self.url)
            for key, value in (env or {}).items():
                m.setenv(key, value)
            return self.cli(*args)

    def ok(self, *args: str, env: dict[str, str] | None = None) -> str:
        result = self(*args, env=env)
        assert result.code == 0, result.err
        return result.out

    def json(self, *args: str, env: dict[str, str] | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", env=env))

    def remember(self, *extra: str) -> None:
        for kind, title, body in NOTES:
            self.ok("remember", "-t", kind, "--title", title, "-m", body, *extra)

    def status(self) -> dict[str, dict[str, Any]]:
        found = self.json("embed", "status")
        assert found["model"] == LOCAL_MODEL and found["problem"] is None, found
        return {index["scope"]: index for index in found["indexes"]}

    def first(self, question: str, *args: str) -> str | None:
        items = self.json("search", question, *args)["items"]
        return items[0]["id"] if items else None


def _clone(tmp_path: Path, name: str, origin: Path) -> Path:
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository holding a small shop: its clones share one project key."""
    seed = tmp_path / "seed"
    for rel, text in SHOP.items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text, encoding="utf-8")
    git(seed, "init", "-q")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "The shop")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


@pytest.fixture
def machine(tmp_path: Path, cli: Run, monkeypatch: pytest.MonkeyPatch, origin: Path
            ) -> Iterator[Callable[[str, str | None], Machine]]:
    """`machine(name, url)`: a new clone of `origin`, `loremap init`ed against `url`."""

    def make(name: str, url: str | None) -> Machine:
        one = Machine(cli, monkeypatch, _clone(tmp_path, name, origin),
                      tmp_path / f"home-{name}", url)
        one.ok("init")
        return one

    yield make


def _owner(pg_url: str, cli: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Machine:
    """The database's owner, who migrates (and secures) it outside any project."""
    admin = tmp_path / "admin"
    admin.mkdir(exist_ok=True)
    owner = Machine(cli, monkeypatch, admin, tmp_path / "home-admin", pg_url)
    owner.ok("db", "migrate")
    return owner


@pytest.fixture
def shared(pg_url: str, cli: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A migrated shared database, used as its owner."""
    _owner(pg_url, cli, monkeypatch, tmp_path)
    return pg_url


def _rows(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return list(cursor.fetchall()) if cursor.description is not None else []


def _pg_coverage(url: str) -> dict[str, tuple[int, int]]:
    """Per project key: (nodes, nodes with a vector of the local model), read as the owner."""
    nodes = dict(_rows(url, "SELECT project, count(*) FROM nodes GROUP BY project"))
    embedded = dict(_rows(url, "SELECT project, count(DISTINCT id) FROM vectors WHERE model = %s "
                               "GROUP BY project", (LOCAL_MODEL,)))
    return {p: (int(n), int(embedded.get(p, 0))) for p, n in nodes.items()}


def _hnsw_indexes(url: str) -> list[str]:
    return [r[0] for r in _rows(url, "SELECT indexdef FROM pg_indexes WHERE tablename = "
                                     "'vectors' AND indexdef LIKE %s", ("%hnsw%",))]


# --- 1. every node in pgvector, and the same answer as on SQLite --------------------------------

def test_enable_puts_every_node_in_pgvector_and_meaning_finds_what_sqlite_finds(shared,
                                                                                machine):
    ann = machine("ann", shared)
    ann.remember()
    assert ann.first(QUESTION, "--kind", "note", *ONLY_VECTORS) is None
    assert f"vectors are on with {LOCAL_MODEL}" in ann.ok("embed", "enable")
    status = ann.status()["project"]
    coverage = _pg_coverage(shared)
    assert len(coverage) == 1  # one project in the database
    nodes, embedded = next(iter(coverage.values()))
    # Notes, files and symbols: the project holds more than the three notes.
    assert nodes > len(NOTES) and embedded == nodes
    assert (status["nodes"], status["embedded"], status["dim"]) == (nodes, nodes, 384)
    assert status["others"] == [] and status["broken"] == 0
    assert _rows(shared, "SELECT DISTINCT dim FROM vectors") == [(384,)]
    assert any("vector(384)" in index for index in _hnsw_indexes(shared))
    found = ann.json("search", QUESTION, "--kind", "note", *ONLY_VECTORS)
    assert found["items"][0]["id"] == GOTCHA
    assert "close in meaning to the question" in found["items"][0]["why"]

    # The same project on SQLite: the same first item, for notes and for code.
    solo = machine("solo", None)
    solo.remember()
    solo.ok("embed", "enable")
    assert solo.status()["project"]["embedded"] == solo.status()["project"]["nodes"] == nodes
    assert solo.first(QUESTION, "--kind", "note", *ONLY_VECTORS) == GOTCHA
    question = "give the customer their money back"
    on_pg = ann.json("search", question, "--kind", "file", *ONLY_VECTORS)["items"]
    on_sqlite = solo.json("search", question, "--kind", "file", *ONLY_VECTORS)["items"]
    assert on_pg and on_pg[0]["id"] == on_sqlite[0]["id"]
    assert "refund" in on_pg[0]["id"]


def test_a_long_file_s_sections_are_its_windows_in_pgvector(shared, machine):
    """A long file is embedded as its head and one window per section on PostgreSQL too, and
    a function deep in it is found by its section's window, which says where it lies."""
    ann = machine("ann", shared)
    (ann.clone / "src" / "shop" / "ledger.py").write_text(_long_file(), encoding="utf-8")
    hashed = {"LOREMAP_EMBEDDER": "hash"}
    ann.ok("index", env=hashed)
    ann.ok("embed", "enable", "--model", "hash", env=hashed)
    chunks = [r[0] for r in _rows(shared, "SELECT chunk FROM vectors WHERE id = %s ORDER BY 1",
                                  ("src/shop/ledger.py",))]
    # Its head, then its sections (the code map counts each assignment as a definition, so
    # the 400 lines of them are sections too), at most FILE_WINDOWS.
    assert 2 < len(chunks) <= FILE_WINDOWS and chunks == list(range(len(chunks)))
    found = ann.json("search", "ledger reconcile order step", "--kind", "file", *ONLY_VECTORS,
                     env=hashed)["items"]
    assert found and found[0]["id"] == "src/shop/ledger.py"
    assert "best match near line 397" in found[0]["why"]  # as on SQLite (test_embed_local)


# --- 2. the personal notes' own index -----------------------------------------------------------

def test_the_personal_notes_own_index_gets_vectors_and_is_searched_by_meaning(shared,
                                                                              machine):
    ann = machine("ann", shared)
    ann.ok("remember", "--personal", "-t", "gotcha", "--title", "Coupon applied twice",
           "-m", NOTES[1][2])
    ann.ok("embed", "enable")
    # The personal index takes the note in at the next recall (it reconciles), which embeds it.
    found = ann.json("search", QUESTION, "--kind", "note", *ONLY_VECTORS)["items"]
    assert found and found[0]["id"] == GOTCHA and found[0]["scope"] == "personal"
    status = ann.status()
    assert status["personal"]["nodes"] == 1
    assert status["personal"]["embedded"] == 1 and status["personal"]["dim"] == 384
    assert status["project"]["embedded"] == status["project"]["nodes"]
    # The personal note never entered the shared database, nor did its vector.
    assert not _rows(shared, "SELECT id FROM vectors WHERE id LIKE %s", ("gotcha-%",))
    # A personal note written later is embedded by the next search.
    ann.ok("remember", "--personal", "-t", "concept", "--title", "Token budget",
           "-m", NOTES[2][2])
    ann.ok("search", "budget")
    assert ann.status()["personal"] == {**status["personal"], "nodes": 2, "embedded": 2}


def test_one_model_load_serves_the_project_and_the_personal_index(shared, machine,
                                                                  monkeypatch):
    import loremap.embed.bert as bert

    loads = []
    real = bert.BertEncoder.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        loads.append(args)
        real(self, *args, **kwargs)

    monkeypatch.setattr(bert.BertEncoder, "__init__", counted)
    ann = machine("ann", shared)
    ann.ok("remember", "--personal", "-t", "gotcha", "--title", "Coupon applied twice",
           "-m", NOTES[1][2])
    ann.ok("embed", "enable")
    assert len(loads) == 1
    found = ann.json("search", QUESTION, *ONLY_VECTORS)["items"]
    assert found[0]["id"] == GOTCHA and found[0]["scope"] == "personal"
    found = ann.json("search", "give the customer their money back", "--kind", "file",
                     *ONLY_VECTORS)["items"]
    assert "refund" in found[0]["id"] and found[0]["scope"] != "personal"
    assert len(loads) == 3  # one per command, both indexes searched with it


# --- 3. a second clone ------------------------------------------------------------------------

def test_a_second_clone_uses_the_vectors_without_embedding_again(shared, machine):
    ann = machine("ann", shared)
    ann.remember()
    ann.ok("embed", "enable")
    bob = machine("bob", shared)
    assert "embedder" not in (bob.clone / ".loremap" / "config.toml").read_text(
        encoding="utf-8")  # Ann's setting is in her working copy until she commits it
    local = {"LOREMAP_EMBEDDER": "local"}
    found = bob.json("embed", "status", env=local)["indexes"][0]
    assert found["embedded"] == found["nodes"] == _pg_coverage(shared).popitem()[1][0]
    assert bob.json("embed", "enable")["embedded"] == 0  # nothing left to embed
    assert bob.first(QUESTION, "--kind", "note", *ONLY_VECTORS) == GOTCHA
    # Bob's note is embedded by his next search, and Ann's search finds it by meaning.
    bob.ok("remember", "-t", "bug", "--title", "Refunds paid out twice",
           "-m", "A customer got their money back two times after a retry.")
    bob.ok("search", "refund")
    assert ann.first("the client was reimbursed a second time", "--kind", "note",
                     *ONLY_VECTORS) == "bug-refunds-paid-out-twice"
    coverage = _pg_coverage(shared).popitem()[1]
    assert coverage[0] == coverage[1]


# --- 4. the runtime role ----------------------------------------------------------------------

def test_the_secured_runtime_role_embeds_and_searches(pg_url, app_role, cli, monkeypatch,
                                                      tmp_path, machine):
    from psycopg.conninfo import make_conninfo

    owner = _owner(pg_url, cli, monkeypatch, tmp_path)
    password = uuid.uuid4().hex
    owner.ok("db", "secure", "--role", app_role, "--password-env", "ROLE_PASSWORD",
             env={"ROLE_PASSWORD": password})
    url = make_conninfo(pg_url, user=app_role, password=password)
    ann = machine("ann", url)
    ann.remember()
    assert not _hnsw_indexes(pg_url)
    assert ann.json("embed", "enable")["embedded"] > len(NOTES)
    assert ann.status()["project"]["embedded"] == ann.status()["project"]["nodes"]
    indexes = _hnsw_indexes(pg_url)
    assert len(indexes) == 1 and "vector(384)" in indexes[0]
    # The index belongs to the tables' owner, not to the runtime role.
    owners = _rows(pg_url, "SELECT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_index i "
                           "ON i.indexrelid = c.oid JOIN pg_class t ON t.oid = i.indrelid "
                           "WHERE t.relname = 'vectors' AND c.relname LIKE %s", ("vectors_hnsw_%",))
    assert owners and all(row[0] != app_role for row in owners)
    assert ann.first(QUESTION, "--kind", "note", *ONLY_VECTORS) == GOTCHA
    # Another model's index is made the same way (hash vectors: 256 dimensions).
    ann.ok("embed", "enable", "--model", "hash")
    assert any("vector(256)" in index for index in _hnsw_indexes(pg_url))
    # The runtime role cannot make an index itself: only the owner's function can.
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute("CREATE INDEX mine ON vectors USING hnsw ((vec::vector(3)) "
                     "vector_cosine_ops)")


# --- 5. reembed, and switching models ---------------------------------------------------------

def test_reembed_rebuilds_and_switching_from_hash_leaves_no_hash_vectors(shared, machine):
    ann = machine("ann", shared)
    ann.remember()
    ann.ok("embed", "enable", "--model", "hash")
    assert _rows(shared, "SELECT DISTINCT model FROM vectors") == [("hash-256",)]
    ann.ok("embed", "enable")
    assert _rows(shared, "SELECT DISTINCT model FROM vectors") == [(LOCAL_MODEL,)]
    assert _rows(shared, "SELECT model FROM vector_models") == [(LOCAL_MODEL,)]
    assert ann.status()["project"]["others"] == []
    # Spoil one note's vector (a valid vector, far from the right one): --stale-only keeps it,
    # reembed replaces it.
    key = _rows(shared, "SELECT DISTINCT project FROM vectors")[0][0]
    right = _vec(shared, key, GOTCHA)
    wrong = "[" + ",".join(["0.05103"] * 384) + "]"
    _rows(shared, "UPDATE vectors SET vec = %s::vector WHERE project = %s AND id = %s",
          (wrong, key, GOTCHA))
    _rows(shared, "DELETE FROM vectors WHERE project = %s AND id = %s",
          (key, "decision-atomic-note-writes"))
    assert "embedded 1 node" in ann.ok("reembed", "--stale-only")
    assert _cosine(_vec(shared, key, GOTCHA), right) < 0.5
    nodes = ann.status()["project"]["nodes"]
    assert f"embedded {nodes} nodes" in ann.ok("reembed")
    assert _cosine(_vec(shared, key, GOTCHA), right) > 0.9999
    assert ann.status()["project"]["embedded"] == nodes
    assert ann.first(QUESTION, "--kind", "note", *ONLY_VECTORS) == GOTCHA
    # Disable drops them all, in the database too.
    ann.ok("embed", "disable")
    assert not _rows(shared, "SELECT 1 FROM vectors") and not _rows(
        shared, "SELECT 1 FROM vector_models")


def _vec(url: str, key: str, node: str) -> list[float]:
    rows = _rows(url, "SELECT vec::text FROM vectors WHERE project = %s AND id = %s AND "
                      "chunk = 0", (key, node))
    assert len(rows) == 1
    return [float(x) for x in rows[0][0].strip("[]").split(",")]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def test_a_model_that_cannot_answer_drops_none_of_the_team_s_vectors(shared, machine):
    ann = machine("ann", shared)
    ann.remember()
    ann.ok("embed", "enable")
    before = _pg_coverage(shared)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = {"LOREMAP_EMBEDDER": "endpoint:nomic-embed-text",
            "LOREMAP_EMBED_URL": f"http://127.0.0.1:{port}/v1"}
    result = ann("reembed", env=down)
    assert result.code == 1 and "refused the connection" in result.err
    assert result.err.count("\n") == 1
    (ann.clone / "src" / "shop" / "tax.py").write_text('"""Sales tax."""\n', encoding="utf-8")
    result = ann("index", env=down)
    assert result.code == 0 and "degraded: nothing embedded" in result.err
    assert _rows(shared, "SELECT model FROM vector_models") == [(LOCAL_MODEL,)]
    # Only what the index added or changed waits for a model that answers.
    missing = _rows(shared, "SELECT id FROM nodes n WHERE NOT EXISTS (SELECT 1 FROM vectors v "
                            "WHERE v.project = n.project AND v.id = n.id) ORDER BY id")
    assert missing == [("src/shop/",), ("src/shop/tax.py",)]
    assert next(iter(before.values()))[0] == _pg_coverage(shared).popitem()[1][0] - 1
    assert ann.first(QUESTION, "--kind", "note", *ONLY_VECTORS) == GOTCHA


# --- 6. the MCP server over stdio -------------------------------------------------------------

def _serve(m: Machine, env: dict[str, str]) -> StdioServerParameters:
    environ = {**os.environ, "LOREMAP_HOME": str(m.home), **env}
    if m.url is not None:
        environ["LOREMAP_DATABASE_URL"] = m.url
    return StdioServerParameters(command=sys.executable, args=["-m", "loremap", "serve"],
                                 cwd=str(m.clone), env=environ)


def _recall(m: Machine, env: dict[str, str], *queries: str) -> list[str]:
    import mcp_types as types

    async def main() -> list[str]:
        out = []
        async with Client(_serve(m, env)) as c:
            for query in queries:
                result = await c.call_tool("recall", {"query": query})
                assert not result.is_error
                block = result.content[0]
                assert isinstance(block, types.TextContent)
                out.append(block.text)
        return out

    return anyio.run(main)


def test_the_mcp_recall_degrades_once_then_answers_by_meaning(shared, machine):
    ann = machine("ann", shared)
    ann.remember()
    first, second = _recall(ann, {"LOREMAP_EMBEDDER": "BAAI/bge-small-en-v1.5"},
                                  "coupon applied twice", "coupon applied twice")
    assert "[gotcha] Coupon applied twice" in first
    assert first.count("degraded") == 1 and "embed enable --model BAAI" in first
    assert "[gotcha] Coupon applied twice" in second and "degraded" not in second
    assert not _rows(shared, "SELECT 1 FROM vectors")  # nothing was embedded or downloaded
    assert not (ann.home / "models" / "BAAI--bge-small-en-v1.5").exists()

    lexical, = _recall(ann, {}, QUESTION)
    assert "Coupon applied twice" not in lexical
    by_meaning, = _recall(ann, {"LOREMAP_EMBEDDER": "local"}, QUESTION)
    assert by_meaning.startswith("[gotcha] Coupon applied twice"), by_meaning
    assert "degraded" not in by_meaning
    nodes, embedded = _pg_coverage(shared).popitem()[1]
    assert embedded == nodes  # the server's recall embedded what had no vector first
