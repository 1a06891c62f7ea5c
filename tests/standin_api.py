"""A scripted stand-in for the Anthropic Messages API, for running the real Claude Code offline.

Claude Code (`claude -p`) is pointed at it with `ANTHROPIC_BASE_URL`; it answers
`POST /v1/messages` with server-sent events in the shape the real API streams (`sse`:
message_start, one content block, message_delta with the usage, message_stop). Each test gives
it a script: a list of steps (call this tool with this input, or say this text) played in order,
per Claude Code session, keyed by the `X-Claude-Code-Session-Id` header. It records every
request body it gets, so a test can assert what reached the model: the hooks' context, the tool
results. A sub-agent on another model (a `model: haiku` agent) can have a script of its own.

Compaction requests are told apart first (they carry the full tool list too) and answered with
a summary. The input tokens reported can grow with the conversation, to trigger automatic
compaction (`--autocompact 100000` compacts once a request reports more than about 67,000).
A step that calls a tool the request does not offer (an MCP server not connected yet) is not
sent: the request is marked `missing <tool>` and answered "done", for the test to report.
It runs in a thread of the test process, on 127.0.0.1 and a free port, and uses only the
standard library.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPACT_MARK = "CRITICAL: Respond with TEXT ONLY"
SUMMARY = ("<analysis>The user asked for work in this repository; tools were called.</analysis>\n"
           "<summary>1. Primary Request: the scripted task.\n2. Current state: in progress."
           "</summary>")


@dataclass(frozen=True)
class ToolUse:
    """A step: the model calls the tool `name` with `input`."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Text:
    """A step: the model answers `text` and ends its turn."""

    text: str


Step = ToolUse | Text
Usage = Callable[[dict[str, Any]], int]


def fixed_usage(tokens: int = 120) -> Usage:
    """The same input tokens for every answer (pick a distinctive number to find it again)."""

    def usage(body: dict[str, Any]) -> int:
        return tokens

    return usage


def growing_usage(base: int = 3000, per_result: int = 15000) -> Usage:
    """Input tokens that grow with the tool results in the request: compaction then has
    something to summarise (a big first answer makes it fail with `too_few_groups`)."""

    def usage(body: dict[str, Any]) -> int:
        return base + per_result * count_tool_results(body)

    return usage


def count_tool_results(body: dict[str, Any]) -> int:
    return sum(1 for message in body.get("messages", [])
               if isinstance(message.get("content"), list)
               for block in message["content"]
               if isinstance(block, dict) and block.get("type") == "tool_result")


def offered_tools(body: dict[str, Any]) -> set[str]:
    """The names of the tools a request offers the model."""
    return {str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)}


def texts(value: object) -> Iterator[str]:
    """Every string under a `text` or `content` key of a request body, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("text", "content") and isinstance(item, str):
                yield item
            else:
                yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last `user` message (Claude Code also sends `system` role messages)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return "\n".join(texts(message.get("content")))
    return ""


@dataclass
class Received:
    """One request as the stand-in got it."""

    path: str
    session: str
    body: dict[str, Any]
    kind: str = ""
    reply: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """All the text the model would read: system blocks, messages, tool results."""
        return "\n".join(texts({"system": self.body.get("system"),
                                "messages": self.body.get("messages")}))


@dataclass
class StandIn:
    """The server. Use as a context manager; `url` is the `ANTHROPIC_BASE_URL`."""

    steps: list[Step]
    usage: Usage = field(default_factory=fixed_usage)
    by_model: dict[str, list[Step]] = field(default_factory=dict)
    """Scripts for the requests whose model id contains the key (e.g. "haiku")."""
    requests: list[Received] = field(default_factory=list)
    _played: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StandIn:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=30)

    def answer(self, path: str, session: str, body: dict[str, Any]) -> dict[str, Any]:
        """The next message for this request, as a Messages API response object."""
        with self._lock:
            received = Received(path, session, body)
            self.requests.append(received)
            if COMPACT_MARK in last_user_text(body):
                step: Step = Text(SUMMARY)
                received.kind = "compaction"
            elif not body.get("tools"):
                # A side request (no tools offered) must not use up a step of the script.
                step = Text("done")
                received.kind = "side"
            else:
                model = str(body.get("model", ""))
                lane = next((key for key in self.by_model if key in model), "")
                script = self.by_model[lane] if lane else self.steps
                played = self._played.get(f"{session} {lane}", 0)
                self._played[f"{session} {lane}"] = played + 1
                step = script[played] if played < len(script) else Text("done")
                received.kind = f"{lane or 'main'} step {played}"
                if isinstance(step, ToolUse) and step.name not in offered_tools(body):
                    received.kind = f"missing {step.name}"
                    step = Text("done")
            number = next(self._ids)
        if isinstance(step, ToolUse):
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_standin_{number:04d}",
                                     "name": step.name, "input": step.input}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": step.text}
            stop = "end_turn"
        received.reply = {
            "id": f"msg_standin_{number:04d}", "type": "message", "role": "assistant",
            "model": body.get("model", "standin-model"), "content": [block],
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": self.usage(body), "output_tokens": 5,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        return received.reply


def sse(message: dict[str, Any]) -> bytes:
    """A whole message as the event stream the Messages API sends."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [
        ("message_delta", {"type": "message_delta", "usage": usage,
                           "delta": {"stop_reason": message["stop_reason"],
                                     "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                   for name, data in events).encode("utf-8")


def _handler(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_standin")
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, status: int, value: object) -> None:
            self._send(status, "application/json", json.dumps(value).encode("utf-8"))

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": self.path}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": standin.usage(body)})
            elif path == "/v1/messages":
                session = self.headers.get("X-Claude-Code-Session-Id", "")
                message = standin.answer(path, session, body)
                if body.get("stream"):
                    self._send(200, "text/event-stream", sse(message))
                else:
                    self._json(200, message)
            else:
                self.do_GET()

    return Handler


def hook_contexts(text: str, event: str) -> list[str]:
    """The loremap fences a hook of `event` added to the model's input, as Claude Code 2.1.328
    renders JSON `additionalContext`: "<Event> hook additional context: <text>"."""
    return re.findall(rf'{event} hook additional context: (<project-memory from="loremap".*?'
                      r"</project-memory>)", text, re.S)
