"""Synthetic Claude Code transcripts whose token totals are known exactly.

The X-ray reads `~/.claude/projects`; real transcripts are private, few and unlabelled, so the
tests and `bench/xray.py` write realistic ones here and compare what a reader reports with what
was written. The records follow the 2.1.3x samples in tests/fixtures/claude_code/transcripts (and
agents.md section 4): the common envelope on every message record; one API response written as
several `assistant` lines (thinking / text / tool_use, one block a line) sharing `message.id` and
`requestId`, each repeating `message.usage`, with `output_tokens` larger on the last line; tool
results as `user` records; `progress`, `file-history-snapshot` and `system` records; auto
compactions (a summariser sub-agent `agent-acompact-<hex>.jsonl`, a `compact_boundary`, then the
`isCompactSummary` user record); Task sub-agents under `<session>/subagents/`; several models, a
`/model` switch, `<synthetic>` error replies with zero usage; and forked sessions whose file
starts with a copy of the parent's records (same message.id + requestId: one call, paid once).
The context grows call by call (cache read = the previous prompt, cache write = what is new)
and drops after a compaction.

    expected = generate(tmp_path, sessions=4, calls_per_session=40, seed=1)
    expected.total.output        # max output_tokens per call: what the X-ray must report
    expected.total.output_first  # first line of each call: what ccusage 18 reports

`generate_bytes(root, target_bytes, seed)` writes sessions until the corpus reaches a size, one
file at a time (memory stays bounded by one session), for the benchmark.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

VERSION = 2  # bump when the output changes, so the bench's cached corpus is rebuilt
MAIN_MODELS = ("claude-opus-4-6", "claude-sonnet-4-5")
EXPLORE_MODEL = "claude-haiku-4-5"
SYNTHETIC = "<synthetic>"
CC_VERSIONS = ("2.1.31", "2.1.34", "2.1.38", "2.1.39")
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
WORDS = (
    "the session cache token model context agent reader transcript usage parse total index "
    "file line record call request message output input write read tool result edit test "
    "config build error fix module function class return value import path json stream "
    "memory budget limit report project branch commit diff patch review check assert "
    "let me look at this and then run it again because the failing case shows that we need"
).split()
PROJECTS = ("webshop", "loremap", "infra-scripts", "mobile-app", "data-pipeline", "docs-site")
SLUG_WORDS = ("radiant", "floating", "music", "quiet", "amber", "river", "swift", "paper")


@dataclass
class Totals:
    """Token sums over distinct API calls (several lines of one call count once)."""

    calls: int = 0
    input: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output: int = 0  # largest output_tokens of each call: the X-ray's figure
    output_first: int = 0  # output_tokens on each call's first line: ccusage 18's figure

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    def add(self, usage: dict[str, Any], first_output: int) -> None:
        self.calls += 1
        self.input += usage["input_tokens"]
        self.cache_write_5m += usage["cache_creation"]["ephemeral_5m_input_tokens"]
        self.cache_write_1h += usage["cache_creation"]["ephemeral_1h_input_tokens"]
        self.cache_read += usage["cache_read_input_tokens"]
        self.output += usage["output_tokens"]
        self.output_first += first_output


@dataclass
class Expected:
    """What a correct reader must find in the corpus `generate*` wrote."""

    models: dict[str, Totals] = field(default_factory=dict)  # real models only
    total: Totals = field(default_factory=Totals)
    sessions: int = 0  # main session files
    subagents: int = 0  # sub-agent files, compaction summarisers included
    compactions: int = 0
    forks: int = 0  # of `sessions`: files that start with a copy of another session
    synthetic: int = 0  # `<synthetic>` error replies (zero usage, not API calls)
    split_calls: int = 0  # calls written over more than one line
    tools: dict[str, int] = field(default_factory=dict)  # tool_use blocks by tool name
    lines: int = 0
    bytes: int = 0

    @property
    def files(self) -> int:
        return self.sessions + self.subagents

    def count(self, model: str, usage: dict[str, Any], first_output: int) -> None:
        self.models.setdefault(model, Totals()).add(usage, first_output)
        self.total.add(usage, first_output)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["files"] = self.files
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expected:
        data = {k: v for k, v in data.items() if k != "files"}
        models = {name: Totals(**t) for name, t in data.pop("models").items()}
        return cls(models=models, total=Totals(**data.pop("total")), **data)


@dataclass(frozen=True)
class Profile:
    """Knobs of the corpus; the defaults resemble a heavy Claude Code user."""

    projects: int = 4
    compact_at: int = 160_000  # prompt size that triggers an auto-compaction
    subagent_rate: float = 0.04  # share of tool calls that are Task sub-agents
    synthetic_rate: float = 0.01  # share of calls answered by a `<synthetic>` error
    cache_miss_rate: float = 0.03  # calls whose cache expired (the whole prompt is re-written)
    switch_rate: float = 0.05  # turns ending with `/model` switching opus <-> sonnet
    # Sessions later resumed into a new file (`--fork-session`, `/branch`, some `--resume`):
    # it starts with a copy of the parent's records, sessionId rewritten, message.id and
    # requestId kept; the copied calls were paid once and must be counted once.
    fork_rate: float = 0.02


def generate(root: Path, sessions: int, calls_per_session: int, seed: int,
             profile: Profile | None = None) -> Expected:
    """Write `sessions` main sessions of `calls_per_session` main-thread API calls each under
    `root/projects/` (plus their sub-agents and compaction summarisers); return the totals."""
    corpus = _Corpus(root, seed, profile or Profile())
    for _ in range(sessions):
        corpus.session(calls_per_session)
    return corpus.expected


def generate_bytes(root: Path, target_bytes: int, seed: int,
                   profile: Profile | None = None) -> Expected:
    """Write sessions of heavy-tailed length (3 to 2,500 calls, median ~40) until the corpus
    holds at least `target_bytes`; one file is open at a time, written through a 1 MB buffer."""
    corpus = _Corpus(root, seed, profile or Profile())
    rng = random.Random(seed ^ 0x5EED)
    while corpus.expected.bytes < target_bytes:
        calls = int(min(2500, max(3, rng.lognormvariate(math.log(40), 1.1))))
        corpus.session(calls)
    return corpus.expected


def project_key(cwd: str) -> str:
    """Claude Code's folder name for a working directory (agents.md section 4)."""
    return "".join(c if c.isalnum() and c.isascii() else "-" for c in cwd)


# --- the corpus: sessions, files, clock ---------------------------------------------------

class _Corpus:
    def __init__(self, root: Path, seed: int, profile: Profile) -> None:
        self.root = root / "projects"
        self.rng = random.Random(seed)
        self.profile = profile
        self.expected = Expected()
        self.text = _text_pool(random.Random(seed + 1))
        self.cwds = [f"/home/dev/projects/{PROJECTS[i % len(PROJECTS)]}" + ("-2" * (i // 6))
                     for i in range(profile.projects)]
        self.clock = START

    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def b62(self, n: int) -> str:
        return "".join(self.rng.choices(B62, k=n))

    def words(self, chars: int) -> str:
        start = self.rng.randrange(0, len(self.text) - chars - 1)
        return self.text[start:start + chars]

    def session(self, calls: int) -> None:
        rng = self.rng
        cwd = rng.choice(self.cwds)
        session_id = self.uuid()
        self.clock += timedelta(minutes=rng.randint(5, 600))
        env = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
               "sessionId": session_id, "version": rng.choice(CC_VERSIONS),
               "gitBranch": rng.choice(("main", "master", "feature/xray", "fix-cache"))}
        if rng.random() < 0.6:
            env["slug"] = "-".join(rng.sample(SLUG_WORDS, 3))
        folder = self.root / project_key(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        with _File(self, folder / f"{session_id}.jsonl", env) as out:
            thread = _Thread(self, out, rng.choice(MAIN_MODELS), ttl_1h=rng.random() < 0.6)
            _main_session(thread, calls)
        self.expected.sessions += 1
        if rng.random() < self.profile.fork_rate:
            self.fork(out.path, thread, max(3, calls // 2))

    def fork(self, parent: Path, was: _Thread, calls: int) -> None:
        """A new session that copies the parent's main thread up to a user prompt, then goes on
        with `calls` calls of its own (the cache is cold: the whole prompt is written again)."""
        records = [json.loads(line) for line in parent.read_text(encoding="utf-8").splitlines()]
        cuts = [i for i, r in enumerate(records) if i and r.get("type") == "user"
                and isinstance(r["message"]["content"], str) and not r.get("isCompactSummary")]
        if not cuts:
            return
        cut = self.rng.choice(cuts)
        session_id = self.uuid()
        env = {**was.out.env, "sessionId": session_id}
        self.clock += timedelta(minutes=self.rng.randint(5, 600))
        with _File(self, parent.parent / f"{session_id}.jsonl", env) as out:
            model, prompt = was.model, 0
            for rec in records[:cut]:
                if "sessionId" in rec:
                    rec["sessionId"] = session_id
                usage = (rec.get("message") or {}).get("usage") if rec["type"] == "assistant" \
                    else None
                if usage and rec["message"]["model"] != SYNTHETIC:
                    model = rec["message"]["model"]
                    prompt = sum(usage[k] for k in ("input_tokens", "cache_read_input_tokens",
                                                    "cache_creation_input_tokens", "output_tokens"))
                out.write(rec)
                out.last = rec.get("uuid", out.last)
            thread = _Thread(self, out, model, was.ttl_1h, base=was.base)
            thread.cached, thread.pending = 0, prompt or was.base
            _main_session(thread, calls, source="resume")
        self.expected.sessions += 1
        self.expected.forks += 1

    def subagent_file(self, parent: _File, agent_id: str) -> _File:
        env = {**parent.env, "isSidechain": True, "agentId": agent_id}
        env["parentUuid"] = None
        folder = self.root / project_key(env["cwd"]) / env["sessionId"] / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        self.expected.subagents += 1
        return _File(self, folder / f"agent-{agent_id}.jsonl", env, clock=parent.clock)


class _File:
    """One transcript being written: the envelope, the uuid chain and the file's clock."""

    def __init__(self, corpus: _Corpus, path: Path, env: dict[str, Any],
                 clock: datetime | None = None) -> None:
        self.corpus = corpus
        self.path = path
        self.env = env
        self.last: str | None = None
        self.clock = clock or corpus.clock
        self.fh = path.open("w", encoding="utf-8", buffering=1 << 20)

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()
        self.corpus.expected.bytes += self.path.stat().st_size
        if self.clock > self.corpus.clock:
            self.corpus.clock = self.clock

    def stamp(self, max_ms: int = 4000) -> str:
        self.clock += timedelta(milliseconds=self.corpus.rng.randint(5, max_ms))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def record(self, kind: str, body: dict[str, Any], parent: str | None | bool = True) -> str:
        """Write a message record (envelope + body) chained to the previous one; its uuid."""
        uuid = self.corpus.uuid()
        rec = dict(self.env)
        rec["parentUuid"] = self.last if parent is True else parent
        rec["type"] = kind
        rec.update(body)
        rec["uuid"] = uuid
        rec["timestamp"] = self.stamp()
        self.write(rec)
        self.last = uuid
        return uuid

    def write(self, rec: dict[str, Any]) -> None:
        self.fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.corpus.expected.lines += 1


# --- a conversation thread: the context and its API calls ------------------------------

class _Thread:
    """The main conversation or one sub-agent: model, cached prefix, tokens not yet cached."""

    def __init__(self, corpus: _Corpus, out: _File, model: str, ttl_1h: bool,
                 base: int | None = None) -> None:
        rng = corpus.rng
        self.corpus = corpus
        self.out = out
        self.model = model
        self.ttl_1h = ttl_1h
        self.base = base if base is not None else rng.randint(9_000, 16_000)  # system + tools
        warm = rng.random() < 0.7  # another session just cached the system prompt
        self.cached = self.base if warm else 0
        self.pending = (0 if warm else self.base) + rng.randint(300, 3_000)  # CLAUDE.md, ...

    @property
    def prompt(self) -> int:
        return self.cached + self.pending

    def call(self, blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        """One API call written as one line per content block; returns its final usage."""
        usage, first = self._usage(blocks)
        msg_id, req_id = f"msg_01{self.corpus.b62(22)}", f"req_011C{self.corpus.b62(20)}"
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            line_usage = usage if last else {**usage, "output_tokens": first}
            message = {"model": self.model, "id": msg_id, "type": "message",
                       "role": "assistant", "content": [block],
                       "stop_reason": stop if last else None, "stop_sequence": None,
                       "usage": line_usage}
            self.out.record("assistant", {"message": message, "requestId": req_id})
        exp = self.corpus.expected
        exp.count(self.model, usage, first)
        exp.split_calls += len(blocks) > 1
        return usage

    def _usage(self, blocks: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
        rng = self.corpus.rng
        if self.cached and rng.random() < self.corpus.profile.cache_miss_rate:
            read, write = 0, self.prompt
        else:
            read, write = self.cached, self.pending
        write_1h = write if self.ttl_1h else 0
        if rng.random() < 0.03:  # a request mixing both TTLs
            write_1h = write // 3
        final = sum(_block_tokens(rng, b) for b in blocks)
        first = final if len(blocks) == 1 or rng.random() < 0.25 else min(final, rng.randint(1, 30))
        uncached = rng.choice((1, 1, 2, 3, 3, 4, 6, 8, 10, 40))
        usage: dict[str, Any] = {
            "input_tokens": uncached, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": write - write_1h,
                               "ephemeral_1h_input_tokens": write_1h},
            "output_tokens": final, "service_tier": "standard",
            "inference_geo": rng.choice(("not_available", "global"))}
        self.cached = read + write
        self.pending = uncached + final
        return usage, first


def _block_tokens(rng: random.Random, block: dict[str, Any]) -> int:
    kind = block["type"]
    if kind == "thinking":
        return rng.randint(40, 1_500)
    if kind == "text":
        return max(1, len(block["text"]) // 4 + rng.randint(0, 400))
    return rng.randint(30, 900)  # tool_use: the arguments (an Edit's strings can be long)


# --- the main session ----------------------------------------------------------------------

def _main_session(t: _Thread, calls: int, source: str = "startup") -> None:
    c, out = t.corpus, t.out
    prompt_id = c.uuid()
    _snapshot(out, prompt_id)
    out.record("progress", {"data": {"type": "hook_progress", "hookEvent": "SessionStart",
                                     "hookName": f"SessionStart:{source}",
                                     "command": "loremap-hook session-start"},
                            "parentToolUseID": prompt_id, "toolUseID": prompt_id})
    _user_prompt(t, first=source == "startup")
    done = 0
    while done < calls:
        if t.prompt > c.profile.compact_at:
            _compact(t)
        if c.rng.random() < c.profile.synthetic_rate:
            _synthetic_error(t)
            continue
        tools = [] if c.rng.random() < 0.18 or done == calls - 1 else _tool_uses(t)
        t.call(_blocks(t, tools), "tool_use" if tools else "end_turn")
        done += 1
        if tools:
            _tool_results(t, tools)
        elif done < calls:
            _end_turn(t)


def _blocks(t: _Thread, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    c = t.corpus
    rng = c.rng
    blocks: list[dict[str, Any]] = []
    if rng.random() < 0.15:
        blocks.append({"type": "text", "text": "\n\n"})
    if rng.random() < 0.5:
        blocks.append({"type": "thinking", "thinking": c.words(rng.randint(60, 600)),
                       "signature": c.b62(rng.randint(150, 500))})
    if not tools or rng.random() < 0.6:
        blocks.append({"type": "text", "text": c.words(rng.randint(30, 600 if tools else 1_600))})
    return blocks + tools


def _user_prompt(t: _Thread, first: bool = False) -> None:
    rng = t.corpus.rng
    text = t.corpus.words(rng.randint(20, 600))
    body: dict[str, Any] = {"message": {"role": "user", "content": text}}
    if first:
        body |= {"thinkingMetadata": {"maxThinkingTokens": 31999}, "todos": [],
                 "permissionMode": rng.choice(("default", "acceptEdits", "bypassPermissions"))}
    t.out.record("user", body)
    t.pending += len(text) // 4 + rng.randint(5, 60)


def _end_turn(t: _Thread) -> None:
    c, out = t.corpus, t.out
    out.record("system", {"subtype": "turn_duration", "durationMs": c.rng.randint(2_000, 300_000),
                          "isMeta": False})
    if c.rng.random() < c.profile.switch_rate:
        t.model = MAIN_MODELS[1 - MAIN_MODELS.index(t.model)]
        for content in ("<command-name>/model</command-name>\n            <command-message>model"
                        "</command-message>\n            <command-args></command-args>",
                        f"<local-command-stdout>Set model to {t.model}</local-command-stdout>"):
            out.record("system", {"subtype": "local_command", "content": content,
                                  "level": "info", "isMeta": False})
    _snapshot(out, c.uuid())
    _user_prompt(t)


def _snapshot(out: _File, message_id: str) -> None:
    stamp = out.stamp(50)
    out.write({"type": "file-history-snapshot", "messageId": message_id,
               "snapshot": {"messageId": message_id, "trackedFileBackups": {},
                            "timestamp": stamp}, "isSnapshotUpdate": False})


def _synthetic_error(t: _Thread) -> None:
    """A client-side error reply: no API call, no requestId, zero usage; then the user retries."""
    zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "server_tool_use": {"web_search_requests": 0,
                                                              "web_fetch_requests": 0},
            "service_tier": None, "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                     "ephemeral_5m_input_tokens": 0}}
    message = {"id": t.corpus.uuid(), "model": SYNTHETIC, "role": "assistant",
               "stop_reason": "stop_sequence", "stop_sequence": "", "type": "message",
               "usage": zero, "content": [{"type": "text", "text": "API Error: 529 Overloaded"}]}
    t.out.record("assistant", {"message": message, "error": "overloaded",
                               "isApiErrorMessage": True})
    t.corpus.expected.synthetic += 1
    _user_prompt(t)


def _compact(t: _Thread) -> None:
    """Auto-compaction: the summariser sub-agent reads the whole context and writes a summary;
    the main transcript gets a boundary and the summary; the context drops to the summary."""
    c, out = t.corpus, t.out
    rng = c.rng
    pre = t.prompt
    agent_id = f"acompact-{rng.getrandbits(24):06x}"
    with c.subagent_file(out, agent_id) as sub:
        sub.record("user", {"message": {"role": "user", "content": "Your task is to create a "
                                        "detailed summary of the conversation so far. "
                                        + c.words(800)}, "isMeta": True})
        summariser = _Thread(c, sub, t.model, ttl_1h=False, base=t.base)
        summariser.cached, summariser.pending = t.cached, t.pending + rng.randint(400, 900)
        summary = c.words(rng.randint(2_000, 6_000))
        summariser.call([{"type": "text", "text": "\n\n<analysis>\n" + summary}], "end_turn")
    out.clock = sub.clock
    c.expected.compactions += 1
    boundary = out.record("system", {"subtype": "compact_boundary",
                                     "content": "Conversation compacted", "isMeta": False,
                                     "level": "info", "logicalParentUuid": out.last,
                                     "compactMetadata": {"trigger": "auto", "preTokens": pre}},
                          parent=None)
    out.record("user", {"message": {"role": "user", "content": "This session is being continued"
                                    " from a previous conversation that ran out of context. "
                                    + summary}, "isVisibleInTranscriptOnly": True,
                        "isCompactSummary": True}, parent=boundary)
    t.cached, t.pending = t.base, len(summary) // 3 + rng.randint(2_000, 12_000)


# --- tools ------------------------------------------------------------------------------

TOOL_WEIGHTS = (("Read", 30), ("Edit", 14), ("Bash", 20), ("Grep", 10), ("Glob", 5),
                ("Write", 3), ("TodoWrite", 4), ("mcp__loremap__search", 4),
                ("mcp__github__get_issue", 2), ("mcp__playwright__browser_snapshot", 2))
TOOL_NAMES = tuple(n for n, _ in TOOL_WEIGHTS)
TOOL_CUM = tuple(sum(w for _, w in TOOL_WEIGHTS[:i + 1]) for i in range(len(TOOL_WEIGHTS)))


def _tool_uses(t: _Thread) -> list[dict[str, Any]]:
    c = t.corpus
    rng = c.rng
    n = 1 if rng.random() < 0.75 else rng.randint(2, 4)
    uses = []
    for _ in range(n):
        if rng.random() < c.profile.subagent_rate and not t.out.env["isSidechain"]:
            name = "Task"
        else:
            name = rng.choices(TOOL_NAMES, cum_weights=TOOL_CUM)[0]
        c.expected.tools[name] = c.expected.tools.get(name, 0) + 1
        uses.append({"type": "tool_use", "id": f"toolu_01{c.b62(22)}", "name": name,
                     "input": _tool_input(c, name, t.out.env["cwd"]),
                     "caller": {"type": "direct"}})
    return uses


def _tool_input(c: _Corpus, name: str, cwd: str) -> dict[str, Any]:
    rng = c.rng
    path = f"{cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
    if name == "Read":
        return {"file_path": path}
    if name == "Edit":
        return {"file_path": path, "old_string": c.words(rng.randint(20, 400)),
                "new_string": c.words(rng.randint(20, 600))}
    if name == "Write":
        return {"file_path": path, "content": c.words(rng.randint(200, 3_000))}
    if name == "Bash":
        return {"command": rng.choice(("pytest -q", "git status", "ls -la", "make lint")),
                "description": c.words(30)}
    if name in ("Grep", "Glob"):
        return {"pattern": rng.choice(WORDS), "path": cwd}
    if name == "TodoWrite":
        return {"todos": [{"content": c.words(40), "status": "pending",
                           "activeForm": c.words(30)} for _ in range(rng.randint(1, 5))]}
    if name == "Task":
        return {"description": c.words(30), "prompt": c.words(rng.randint(100, 800)),
                "subagent_type": rng.choice(("Explore", "general-purpose"))}
    return {"query": c.words(rng.randint(10, 60))}


def _tool_results(t: _Thread, tools: list[dict[str, Any]]) -> None:
    c, out = t.corpus, t.out
    rng = c.rng
    source = out.last
    for use in tools:
        if rng.random() < 0.4:
            out.record("progress", {"data": {"type": "hook_progress", "hookEvent": "PreToolUse",
                                             "hookName": f"PreToolUse:{use['name']}",
                                             "command": "loremap-hook pre-tool-use"},
                                    "toolUseID": use["id"], "parentToolUseID": use["id"]})
    for use in tools:
        if use["name"] == "Task":
            text, extra, tokens = _run_subagent(t, use)
        else:
            text, extra = _tool_output(c, use)
            tokens = int(len(text) / 3.2) + rng.randint(0, 1_200)
        content = {"type": "tool_result", "content": text, "tool_use_id": use["id"]}
        out.record("user", {"message": {"role": "user", "content": [content]},
                            "toolUseResult": extra, "sourceToolAssistantUUID": source})
        t.pending += tokens


def _tool_output(c: _Corpus, use: dict[str, Any]) -> tuple[str, Any]:
    rng = c.rng
    name = use["name"]
    size = int(min(8_000, rng.lognormvariate(math.log(300), 1.0)))
    if name == "Read":
        lines = c.words(size).split("\n")
        text = "".join(f"{i + 1:>6}\u2192{line}\n" for i, line in enumerate(lines))
        file = {"filePath": use["input"]["file_path"], "content": "\n".join(lines),
                "numLines": len(lines), "startLine": 1, "totalLines": len(lines)}
        return text, {"type": "text", "file": file}
    text = c.words(size)
    if name == "Bash":
        return text, {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
    if name == "Edit":
        return "The file has been updated.", {"filePath": use["input"]["file_path"],
                                              "oldString": use["input"]["old_string"],
                                              "newString": use["input"]["new_string"]}
    return text, text[:200]


def _run_subagent(t: _Thread, use: dict[str, Any]) -> tuple[str, Any, int]:
    """A Task sub-agent: its own transcript, context and model; the parent gets its answer."""
    c = t.corpus
    rng = c.rng
    explore = use["input"]["subagent_type"] == "Explore"
    agent_id = f"a{rng.getrandbits(24):06x}"
    calls = rng.randint(2, 30)
    with c.subagent_file(t.out, agent_id) as sub:
        sub.record("user", {"message": {"role": "user", "content": use["input"]["prompt"]}})
        agent = _Thread(c, sub, EXPLORE_MODEL if explore else t.model, ttl_1h=False)
        usage: dict[str, Any] = {}
        for i in range(calls):
            tools = [] if i == calls - 1 else _tool_uses(agent)
            usage = agent.call(_blocks(agent, tools), "tool_use" if tools else "end_turn")
            if tools:
                _tool_results(agent, tools)
        t.out.clock = sub.clock
    answer = c.words(rng.randint(200, 3_000))
    extra = {"status": "completed", "prompt": use["input"]["prompt"], "agentId": agent_id,
             "content": [{"type": "text", "text": answer}], "totalDurationMs": rng.randint(
                 5_000, 400_000), "totalTokens": agent.prompt, "totalToolUseCount": calls - 1,
             "usage": usage}
    return answer, extra, len(answer) // 4 + 50


def _text_pool(rng: random.Random, size: int = 1 << 18) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choices(WORDS, k=rng.randint(3, 16)))
        parts.append(line)
        length += len(line) + 1
    return "\n".join(parts)

