"""The endpoint provider against a real OpenAI-compatible stand-in server: an http.server in a
thread on 127.0.0.1 whose answer each test chooses (good vectors, shuffled indices, a stall, a
500, garbage, the wrong dimension)."""

from __future__ import annotations

import json
import math
import socket
import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

import pytest

from httpstub import Quiet, serve
from loremap.embed.endpoint import EndpointEmbedder, endpoint_url
from loremap.errors import EmbedderUnavailable, InvalidInput


class Seen(NamedTuple):
    path: str
    headers: dict[str, str]
    body: dict[str, object]


Answer = tuple[int, bytes]
Responder = Callable[[dict[str, object]], Answer]


class StandIn:
    """The server's state: what it was sent, and what it answers."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.respond: Responder = lambda body: _ok(_vectors_for(body, dim=4))
        self.hold: threading.Event | None = None
        self.url = ""


def _vectors_for(body: dict[str, object], dim: int) -> list[list[float]]:
    """A distinct, non-unit vector per input: its length and its index, then ones."""
    inputs = body["input"]
    assert isinstance(inputs, list)
    return [[float(len(text)), float(i + 1)] + [1.0] * (dim - 2) for i, text in enumerate(inputs)]


def _ok(vectors: list[list[float]], order: list[int] | None = None) -> Answer:
    order = order if order is not None else list(range(len(vectors)))
    data = [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in order]
    return 200, json.dumps({"object": "list", "data": data, "model": "m"}).encode("utf-8")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(Quiet):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            state.seen.append(Seen(self.path, dict(self.headers), body))
            if state.hold is not None:
                state.hold.wait(30)
            status, payload = state.respond(body)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (the timeout test)
                pass

    with serve(Handler) as url:
        state.url = url
        try:
            yield state
        finally:
            if state.hold is not None:
                state.hold.set()


def _refusal(embedder: EndpointEmbedder, texts: list[str]) -> str:
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.embed(texts)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/embeddings",
                                    "/v1/embeddings/"])
def test_any_spelling_of_the_server_url_posts_to_v1_embeddings(server: StandIn,
                                                               suffix: str) -> None:
    EndpointEmbedder(server.url + suffix, "nomic-embed-text").embed(["a note"])

    assert [seen.path for seen in server.seen] == ["/v1/embeddings"]
    assert server.seen[0].body == {"model": "nomic-embed-text", "input": ["a note"]}


def test_a_server_under_a_path_keeps_its_path() -> None:
    assert endpoint_url("https://api.example.test/openai/v1") == \
        "https://api.example.test/openai/v1/embeddings"
    assert endpoint_url("http://gpu:8000/proxy") == "http://gpu:8000/proxy/v1/embeddings"


def test_vectors_come_back_unit_length_in_input_order_whatever_order_the_server_lists(
        server: StandIn) -> None:
    server.respond = lambda body: _ok(_vectors_for(body, dim=3), order=[2, 0, 1])
    texts = ["one", "three", "seventeen"]

    vectors = EndpointEmbedder(server.url, "m").embed(texts)

    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        raw = [float(len(text)), float(i + 1), 1.0]
        norm = math.sqrt(sum(v * v for v in raw))
        assert vector == pytest.approx([v / norm for v in raw])
        assert math.fsum(v * v for v in vector) == pytest.approx(1.0)


def test_texts_are_sent_in_batches_and_rejoined_in_order(server: StandIn) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]

    vectors = EndpointEmbedder(server.url, "m", batch=2).embed(texts)

    assert [seen.body["input"] for seen in server.seen] == [["a", "bb"], ["ccc", "dddd"],
                                                            ["eeeee"]]
    lengths = [v[0] / v[2] for v in vectors]  # the stand-in's first value is len(text)
    assert lengths == pytest.approx([1, 2, 3, 4, 5])


def test_no_texts_send_no_request(server: StandIn) -> None:
    assert EndpointEmbedder(server.url, "m").embed([]) == []
    assert server.seen == []


def test_the_api_key_goes_as_a_bearer_token_and_only_when_given(server: StandIn) -> None:
    EndpointEmbedder(server.url, "m", api_key="sk-test-123").embed(["x"])
    EndpointEmbedder(server.url, "m").embed(["x"])

    assert server.seen[0].headers["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in server.seen[1].headers


def test_the_name_carries_the_model_and_the_dimension_is_learned_from_the_first_answer(
        server: StandIn) -> None:
    embedder = EndpointEmbedder(server.url, "bge-m3")
    assert (embedder.name, embedder.dim) == ("endpoint:bge-m3", None)

    embedder.embed(["x"])

    assert embedder.dim == 4


def test_an_answer_of_another_dimension_than_the_first_is_refused(server: StandIn) -> None:
    embedder = EndpointEmbedder(server.url, "m")
    embedder.embed(["x"])
    server.respond = lambda body: _ok(_vectors_for(body, dim=6))

    message = _refusal(embedder, ["y"])

    assert "dimension 6" in message and "expected 4" in message and server.url in message
    assert embedder.dim == 4


def test_an_answer_of_another_dimension_than_configured_is_refused(server: StandIn) -> None:
    message = _refusal(EndpointEmbedder(server.url, "m", dim=768), ["x"])

    assert "dimension 4" in message and "expected 768" in message


def test_vectors_of_mixed_dimensions_in_one_answer_are_refused(server: StandIn) -> None:
    server.respond = lambda body: _ok([[1.0, 2.0], [1.0, 2.0, 3.0]])
    embedder = EndpointEmbedder(server.url, "m")

    message = _refusal(embedder, ["a", "b"])

    assert "dimension 3" in message and "expected 2" in message
    assert embedder.dim is None  # a refused answer teaches nothing


def test_a_server_that_stalls_past_the_timeout_is_one_line_naming_url_and_timeout(
        server: StandIn) -> None:
    server.hold = threading.Event()
    embedder = EndpointEmbedder(server.url + "/v1", "m", timeout=0.2)

    message = _refusal(embedder, ["x"])

    assert f"{server.url}/v1/embeddings" in message and "0.2 s" in message
    assert embedder.dim is None


def test_a_closed_port_is_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the request: nothing listens

    message = _refusal(EndpointEmbedder(f"http://127.0.0.1:{port}", "m"), ["x"])

    assert "refused the connection" in message and str(port) in message


def test_an_http_error_says_the_status_and_the_servers_message(server: StandIn) -> None:
    error = {"error": {"message": "model 'm' not found,\ntry pulling it first", "type": "x"}}
    server.respond = lambda body: (500, json.dumps(error).encode("utf-8"))

    message = _refusal(EndpointEmbedder(server.url, "m"), ["x"])

    assert "HTTP 500" in message
    assert "model 'm' not found, try pulling it first" in message


def test_a_long_error_page_is_cut(server: StandIn) -> None:
    server.respond = lambda body: (502, b"<html>" + b"bad gateway " * 500 + b"</html>")

    message = _refusal(EndpointEmbedder(server.url, "m"), ["x"])

    assert "HTTP 502" in message and "bad gateway" in message and len(message) < 300


def test_a_refused_key_says_to_check_it(server: StandIn) -> None:
    server.respond = lambda body: (401, b'{"detail": "invalid api key"}')

    message = _refusal(EndpointEmbedder(server.url, "m", api_key="wrong"), ["x"])

    assert "HTTP 401" in message and "API key" in message and "invalid api key" in message


def test_garbage_instead_of_json_is_refused(server: StandIn) -> None:
    server.respond = lambda body: (200, b"\x00\xffnot json at all {")

    message = _refusal(EndpointEmbedder(server.url, "m"), ["x"])

    assert "did not answer JSON" in message


@pytest.mark.parametrize("payload", [b"[]", b'{"embeddings": [[1, 2]]}', b'{"data": "x"}'])
def test_json_of_another_shape_is_refused(server: StandIn, payload: bytes) -> None:
    server.respond = lambda body: (200, payload)

    assert "`data` list" in _refusal(EndpointEmbedder(server.url, "m"), ["x"])


def test_the_wrong_number_of_embeddings_is_refused(server: StandIn) -> None:
    server.respond = lambda body: _ok([[1.0, 0.0]])

    message = _refusal(EndpointEmbedder(server.url, "m"), ["a", "b", "c"])

    assert "1 embeddings for 3 inputs" in message


@pytest.mark.parametrize("indices", [[0, 0], [0, 2], ["0", 1], [True, 0]])
def test_indices_that_are_not_each_position_once_are_refused(server: StandIn,
                                                             indices: list[object]) -> None:
    data = [{"index": i, "embedding": [1.0, 2.0]} for i in indices]
    server.respond = lambda body: (200, json.dumps({"data": data}).encode("utf-8"))

    assert "index" in _refusal(EndpointEmbedder(server.url, "m"), ["a", "b"])


@pytest.mark.parametrize("value", ['"0.5"', "null", "true", "NaN", "Infinity", "[1]"])
def test_a_value_that_is_not_a_finite_number_is_refused(server: StandIn, value: str) -> None:
    payload = '{"data": [{"index": 0, "embedding": [0.1, ' + value + ', 0.3]}]}'
    server.respond = lambda body: (200, payload.encode("utf-8"))
    embedder = EndpointEmbedder(server.url, "m")

    assert "non-numeric value" in _refusal(embedder, ["x"])
    assert embedder.dim is None


@pytest.mark.parametrize("embedding", ["[]", "null", '"0.1,0.2"'])
def test_an_item_without_an_embedding_list_is_refused(server: StandIn, embedding: str) -> None:
    payload = '{"data": [{"index": 0, "embedding": ' + embedding + '}]}'
    server.respond = lambda body: (200, payload.encode("utf-8"))

    assert "no `embedding` list" in _refusal(EndpointEmbedder(server.url, "m"), ["x"])


def test_an_all_zero_vector_is_refused(server: StandIn) -> None:
    server.respond = lambda body: _ok([[0.0, 0.0, 0.0]])

    assert "all-zero vector" in _refusal(EndpointEmbedder(server.url, "m"), ["x"])


@pytest.mark.parametrize(("url", "kwargs", "expected"), [
    ("localhost:11434", {}, "http:// or https://"),
    ("ftp://host/v1", {}, "http:// or https://"),
    ("", {}, "http:// or https://"),
    ("http://h", {"model": " "}, "name the model"),
    ("http://h", {"dim": 0}, "dimension 0"),
    ("http://h", {"timeout": 0}, "timeout 0"),
    ("http://h", {"timeout": float("nan")}, "timeout nan"),
    ("http://h", {"batch": 0}, "batch 0"),
])
def test_bad_settings_are_refused_before_any_request(url: str, kwargs: dict[str, object],
                                                     expected: str) -> None:
    kwargs = dict(kwargs)
    model = kwargs.pop("model", "m")
    assert isinstance(model, str)
    with pytest.raises(InvalidInput, match=expected) as caught:
        EndpointEmbedder(url, model, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


class _WaitingStore:
    """A real SQLite index whose text search waits until the embeddings server has the
    question: it returns only when the question's vector is asked for while the text lists
    run, and fails after 30 s when the two run one after the other."""

    def __init__(self, store: object, asked: threading.Event) -> None:
        self._store, self._asked = store, asked

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def text_search(self, *args: object, **kwargs: object) -> object:
        assert self._asked.wait(30), "the question's vector was not asked for meanwhile"
        return self._store.text_search(*args, **kwargs)  # type: ignore[attr-defined]


def test_the_question_is_embedded_while_the_text_lists_run(server: StandIn, tmp_path) -> None:
    from loremap.model import Note, NoteType
    from loremap.search import Engine, Request
    from loremap.store.sqlite import SqliteStore
    from loremap.text import Analyzer

    asked = threading.Event()

    def respond(body: dict[str, object]) -> Answer:
        asked.set()
        return _ok(_vectors_for(body, dim=4))

    server.respond = respond
    embedder = EndpointEmbedder(server.url, "m")
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer(["en"]))
    note = Note(id="refunds", type=NoteType.CONCEPT, title="Refunds", body="Money goes back.")
    with store.write():
        store.upsert_note(note, "project", "notes/refunds.md", "h", 1, 1)
        store.put_vectors(embedder.name, 4, [("refunds", 0, [0.5, 0.5, 0.5, 0.5])])
    engine = Engine(_WaitingStore(store, asked), Analyzer(["en"]),  # type: ignore[arg-type]
                    embedder=embedder)
    found = engine.candidates(Request("how do refunds work"))
    assert found.lists["vectors"] == ["refunds"] and found.lists["bm25"] == ["refunds"]
    store.close()


def test_a_failure_on_the_question_s_thread_is_the_caller_s(server: StandIn) -> None:
    from loremap.search.embed import Early

    server.respond = lambda body: (500, b"{}")
    early = Early(EndpointEmbedder(server.url, "m"), "a question")
    with pytest.raises(EmbedderUnavailable):
        early.vector()
