"""The `endpoint` provider: vectors from an OpenAI-compatible `/v1/embeddings` server the user
runs (Ollama, LM Studio, vLLM, llama.cpp's server, a cloud API).

It needs no model files and no extra: one JSON POST per batch over the standard library's
`urllib.request` (imported when the first batch is sent, so configuring an endpoint costs the
hook path nothing). What a server answers is checked at this boundary before a vector reaches
the index: the count, the order (`index`), the dimension against the one expected or first
seen, and every value a finite number; vectors are normalised to unit length here, since
servers differ on whether they do. Every failure is one `EmbedderUnavailable` line naming the
URL, so search can continue lexical and say why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from loremap.errors import EmbedderUnavailable, InvalidInput

if TYPE_CHECKING:
    from urllib.error import HTTPError, URLError

_MESSAGE_CHARS = 160  # of a server's error message, in our one line
_ERROR_BODY_BYTES = 65536


def endpoint_url(url: str) -> str:
    """`url` as the full embeddings URL: a server root, `.../v1` or `.../v1/embeddings`."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInput(f"embedding endpoint {url!r}: give an http:// or https:// URL, "
                           "e.g. http://localhost:11434/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1/embeddings"):
        path += "/embeddings" if path.endswith("/v1") else "/v1/embeddings"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class EndpointEmbedder:
    """An `Embedder` over an OpenAI-compatible embeddings server.

    `dim`, when not given, is learned from the first answer; later answers must agree.
    `api_key` (the caller reads it from the environment) is sent as a bearer token.
    """

    def __init__(self, url: str, model: str, *, dim: int | None = None,
                 timeout: float = 10.0, api_key: str | None = None, batch: int = 64) -> None:
        if not model.strip():
            raise InvalidInput("embedding endpoint: name the model the server should run")
        if dim is not None and dim < 1:
            raise InvalidInput(f"embedding endpoint: dimension {dim} must be at least 1")
        if not timeout > 0:
            raise InvalidInput(f"embedding endpoint: timeout {timeout} must be above 0 seconds")
        if batch < 1:
            raise InvalidInput(f"embedding endpoint: batch {batch} must be at least 1")
        self.url = endpoint_url(url)
        self.model = model.strip()
        self.name = f"endpoint:{self.model}"
        self.dim = dim
        self.timeout = timeout
        self.batch = batch
        self._api_key = api_key

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of `texts`, in order, one request per `batch` texts."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            out.extend(self._embed_batch(list(texts[start:start + self.batch])))
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        answer = self._post({"model": self.model, "input": texts})
        vectors = _vectors(answer, len(texts), self.url)
        dim = self.dim if self.dim is not None else len(vectors[0])
        for i, vector in enumerate(vectors):
            if len(vector) != dim:
                raise EmbedderUnavailable(
                    f"embedding endpoint {self.url} returned a vector of dimension {len(vector)} "
                    f"for input {i}, expected {dim} (model {self.model}): a model switched under "
                    "the same name needs `loremap reembed`")
        units = [_unit(vector, i, self.url) for i, vector in enumerate(vectors)]
        self.dim = dim  # learned only from an answer that passed every check
        return units

    def _post(self, payload: dict[str, object]) -> object:
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "loremap"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(payload).encode("utf-8"),
                                         headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body: bytes = response.read()
        except urllib.error.HTTPError as exc:
            raise EmbedderUnavailable(_status_line(self.url, exc.code, _read_error(exc))) from None
        except urllib.error.URLError as exc:
            raise EmbedderUnavailable(self._unreachable(exc)) from None
        except TimeoutError:
            raise EmbedderUnavailable(self._timed_out()) from None
        except (OSError, ValueError) as exc:  # a reset, a cut-off answer, a malformed status line
            raise EmbedderUnavailable(f"embedding endpoint {self.url} broke off its answer: "
                                      f"{_one_line(str(exc)) or type(exc).__name__}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise EmbedderUnavailable(
                f"embedding endpoint {self.url} did not answer JSON (it began "
                f"{_one_line(body[:60].decode('utf-8', 'replace'))!r})") from None

    def _unreachable(self, exc: URLError) -> str:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return self._timed_out()
        if isinstance(reason, ConnectionRefusedError):
            return (f"embedding endpoint {self.url} refused the connection: is the server "
                    "running and listening there?")
        return f"cannot reach embedding endpoint {self.url}: {_one_line(str(reason))}"

    def _timed_out(self) -> str:
        return (f"embedding endpoint {self.url} did not answer within {self.timeout:g} s "
                "(the endpoint's timeout): is the server overloaded or still loading the model?")


def _vectors(answer: object, count: int, url: str) -> list[list[object]]:
    """The `data[i].embedding` lists of an answer, ordered by `index`."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise EmbedderUnavailable(f"embedding endpoint {url} answered JSON without a `data` "
                                  "list: is it an OpenAI-compatible /v1/embeddings server?")
    if len(data) != count:
        raise EmbedderUnavailable(f"embedding endpoint {url} returned {len(data)} embeddings "
                                  f"for {count} inputs")
    by_index: dict[int, list[object]] = {}
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not vector:
            raise EmbedderUnavailable(f"embedding endpoint {url}: data[{position}] has no "
                                      "`embedding` list of numbers")
        if type(index) is not int or not 0 <= index < count or index in by_index:
            raise EmbedderUnavailable(f"embedding endpoint {url}: data[{position}] has index "
                                      f"{index!r}; expected each of 0..{count - 1} once")
        by_index[index] = vector
    return [by_index[i] for i in range(count)]


def _unit(vector: list[object], i: int, url: str) -> list[float]:
    values: list[float] = []
    for value in vector:
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value)):
            raise EmbedderUnavailable(f"embedding endpoint {url} returned a non-numeric value "
                                      f"{_one_line(repr(value))[:40]} in embedding {i}")
        values.append(float(value))
    norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0.0:
        raise EmbedderUnavailable(f"embedding endpoint {url} returned an all-zero vector for "
                                  f"input {i}")
    return [v / norm for v in values]


def _read_error(exc: HTTPError) -> str:
    """The message of an error answer: OpenAI's `error.message`, a `detail`, or the text."""
    try:
        raw = exc.read(_ERROR_BODY_BYTES)
    except (OSError, ValueError):
        return ""
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, dict):
        for key in ("error", "detail", "message"):
            value = parsed.get(key)
            if isinstance(value, dict):
                value = value.get("message", value)
            if value:
                return str(value)
    return text


def _status_line(url: str, status: int, message: str) -> str:
    message = _one_line(message)
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS - 1].rstrip() + "…"
    hint = " (check the API key)" if status in (401, 403) else ""
    return (f"embedding endpoint {url} answered HTTP {status}{hint}"
            + (f": {message}" if message else ""))


def _one_line(text: str) -> str:
    return " ".join(text.split())
