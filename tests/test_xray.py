"""The X-ray: counting each API call once, costs, the replay's arithmetic on a hand-computed
session, filters, bad input, and `loremap xray trim`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from loremap.xray.costs import Prices, equivalents
from loremap.xray.replay import fixed_context, policy_cost, real_cost
from loremap.xray.transcripts import Usage, project_key, read_chain, transcripts_root

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "claude_code" / "transcripts"
PROJECT = "/home/dev/shop"


class Writer:
    """Builds transcript lines shaped like Claude Code 2.1.3x writes them."""

    def __init__(self, session: str = "s1", cwd: str = PROJECT, day: str = "2026-11-20",
                 agent: str | None = None) -> None:
        self.session, self.cwd, self.day, self.agent = session, cwd, day, agent
        self.lines: list[str] = []
        self.n = 0

    def _envelope(self, kind: str) -> dict[str, Any]:
        self.n += 1
        out = {"type": kind, "uuid": f"u{self.n}", "parentUuid": None,
               "isSidechain": self.agent is not None, "userType": "external", "cwd": self.cwd,
               "sessionId": self.session, "version": "2.1.39", "gitBranch": "main",
               "timestamp": f"{self.day}T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"}
        if self.agent:
            out["agentId"] = self.agent
        return out

    def user(self, text: str | None = "fix the coupon bug") -> Writer:
        record = self._envelope("user")
        content: Any = text if text is not None else []
        record["message"] = {"role": "user", "content": content}
        self.lines.append(json.dumps(record))
        return self

    def call(self, usage: Usage, model: str = "claude-opus-4-6", outputs: tuple[int, ...] = (),
             tools: tuple[str, ...] = ()) -> Writer:
        """One API call as several lines sharing message.id and requestId; `outputs` are the
        output counts written on the lines before the last (which has `usage.output`)."""
        who = f"{self.session}_{self.agent or 'main'}_{self.n}"
        msg, req = f"msg_{who}", f"req_{who}"
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
        blocks += [{"type": "tool_use", "id": f"toolu_{self.n}_{i}", "name": t, "input": {}}
                   for i, t in enumerate(tools)]
        counts = [*outputs, usage.output]
        for k, block in enumerate(blocks if len(blocks) >= len(counts) else
                                  blocks + [{"type": "text", "text": "."}] * len(counts)):
            record = self._envelope("assistant")
            record["requestId"] = req
            out = counts[min(k, len(counts) - 1)]
            record["message"] = {"id": msg, "type": "message", "role": "assistant",
                                 "model": model, "content": [block], "usage": {
                                     "input_tokens": usage.input,
                                     "cache_creation_input_tokens": usage.cache_write,
                                     "cache_read_input_tokens": usage.cache_read,
                                     "cache_creation": {
                                         "ephemeral_5m_input_tokens": usage.cache_write_5m,
                                         "ephemeral_1h_input_tokens": usage.cache_write_1h},
                                     "output_tokens": out, "service_tier": "standard"}}
            self.lines.append(json.dumps(record))
        return self

    def boundary(self, pre_tokens: int, trigger: str = "auto") -> Writer:
        record = self._envelope("system")
        record.update(subtype="compact_boundary", content="Conversation compacted",
                      compactMetadata={"trigger": trigger, "preTokens": pre_tokens})
        self.lines.append(json.dumps(record))
        return self

    def raw(self, line: str) -> Writer:
        self.lines.append(line)
        return self

    def write(self, root: Path, name: str | None = None, newline_at_end: bool = True) -> Path:
        folder = root / "projects" / project_key(Path(self.cwd))
        if self.agent:
            path = folder / self.session / "subagents" / f"agent-{self.agent}.jsonl"
        else:
            path = folder / f"{name or self.session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + ("\n" if newline_at_end else ""),
                        encoding="utf-8")
        return path


def U(input: int = 0, w5: int = 0, w1: int = 0, read: int = 0, out: int = 0) -> Usage:  # noqa: N802
    return Usage(input, w5, w1, read, out)


def xray(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("xray", "--json", "--days", "0", *args)
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


# --- counting ----------------------------------------------------------------------------------

def test_a_call_written_as_several_lines_counts_once_with_its_largest_figures(tmp_path):
    w = Writer().user().call(U(3, 100, 0, 5000, 299), outputs=(10, 10, 10), tools=("Read",))
    chain = read_chain(w.write(tmp_path), "p")
    assert len(chain.calls) == 1
    assert chain.calls[0].usage == U(3, 100, 0, 5000, 299)
    assert chain.tools == {"Read": 1}


def test_the_cli_totals_agree_with_an_independent_sum(claude, cli):
    w = Writer().user()
    expected = Usage()
    for i in range(1, 6):
        u = U(i, 1000 * i, 500 if i % 2 else 0, 20_000 * i, 50 * i)
        w.call(u, outputs=(7,))
        expected = expected.plus(u)
    w.write(claude)
    report = xray(cli)
    t = report["totals"]
    assert (t["calls"], t["input"], t["cache_write_5m"], t["cache_write_1h"], t["cache_read"],
            t["output"]) == (5, *expected)
    assert t["equiv"] == pytest.approx(equivalents(expected), abs=0.1)
    assert equivalents(expected) == pytest.approx(
        expected.input + 0.1 * expected.cache_read + 1.25 * expected.cache_write_5m
        + 2 * expected.cache_write_1h + 5 * expected.output)


def test_dollars_come_from_the_price_table_and_unknown_models_are_flagged(claude, cli, tmp_path):
    Writer().user().call(U(1_000_000, 0, 0, 0, 1_000_000), model="claude-sonnet-4-5-20250929") \
        .call(U(500, 0, 0, 0, 10), model="mystery-model-9").write(claude)
    report = xray(cli)
    by_model = {r["model"]: r for r in report["by_model"]}
    assert by_model["claude-sonnet-4-5-20250929"]["usd"] == pytest.approx(3.0 + 15.0)
    assert by_model["mystery-model-9"]["unpriced_calls"] == 1
    assert report["unpriced_models"] == [{"model": "mystery-model-9", "calls": 1}]
    assert report["totals"]["usd"] == pytest.approx(18.0)
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."mystery-model"]\ninput = 1.0\noutput = 2.0\n', encoding="utf-8")
    custom = xray(cli, "--prices", str(prices))
    assert custom["unpriced_models"] == [{"model": "claude-sonnet-4-5-20250929", "calls": 1}]
    assert custom["totals"]["usd"] == pytest.approx((500 * 1.0 + 10 * 2.0) / 1e6)


def test_a_bad_price_file_is_refused_in_one_line(claude, cli, tmp_path):
    bad = tmp_path / "prices.toml"
    bad.write_text('[models."x"]\ninput = "cheap"\n', encoding="utf-8")
    result = cli("xray", "--prices", str(bad))
    assert result.code == 1 and result.err.count("\n") == 1
    assert "input and output" in result.err


def test_a_call_copied_into_a_forked_session_counts_once(claude, cli):
    parent = Writer(session="parent").user().call(U(1, 10, 0, 100, 5)).call(U(1, 20, 0, 110, 6))
    parent.write(claude)
    fork = Writer(session="fork")
    fork.lines = [line.replace('"sessionId": "parent"', '"sessionId": "fork"')
                  for line in parent.lines]
    fork.n = parent.n
    fork.call(U(1, 30, 0, 130, 7)).write(claude)
    report = xray(cli)
    assert report["totals"]["calls"] == 3 and report["totals"]["output"] == 5 + 6 + 7


def test_sub_agents_belong_to_their_session_and_the_samples_read(claude, cli):
    Writer(session="main").user().call(U(1, 10, 0, 100, 5)).write(claude)
    Writer(session="main", agent="a1").user("explore").call(U(2, 20, 0, 200, 6)).write(claude)
    report = xray(cli)
    assert report["session_count"] == 1
    assert report["sessions"][0]["subagents"] == 1 and report["sessions"][0]["calls"] == 2
    spotter = read_chain(SAMPLES / "spotter-short.jsonl", "p")
    assert len(spotter.calls) == 1 and spotter.tools == {"Bash": 1, "Glob": 1}
    assert spotter.calls[0].usage == U(3, 0, 13835, 11515, 13)


def test_compactions_and_the_context_curve_are_reported(claude, cli):
    w = Writer().user()
    for i in range(1, 5):
        w.call(U(1, 5000, 0, 40_000 * i, 100))
    w.boundary(170_251).user("summary").call(U(1, 20_000, 0, 10_000, 100))
    w.write(claude)
    session = xray(cli)["sessions"][0]
    assert session["compactions"] == [{"at": session["compactions"][0]["at"], "trigger": "auto",
                                       "pre_tokens": 170_251, "after_calls": 4}]
    assert [p[1] for p in session["curve"]] == [45_001, 85_001, 125_001, 165_001, 30_001]
    assert session["peak_context"] == 165_001


def test_days_and_project_filters(claude, cli, monkeypatch):
    old = Writer(session="old", day="2020-01-01").user().call(U(1, 1, 0, 1, 1)).write(claude)
    os.utime(old, (0, 0))
    Writer(session="new", day="2999-01-01").user().call(U(2, 2, 0, 2, 2)).write(claude)
    Writer(session="elsewhere", cwd="/home/dev/other").user().call(U(4, 4, 0, 4, 4)) \
        .write(claude)
    assert xray(cli)["totals"]["calls"] == 3
    recent = cli("xray", "--json", "--days", "30")
    assert json.loads(recent.out)["totals"]["input"] == 2 + 4
    assert xray(cli, "--project", "/home/dev/other")["totals"]["input"] == 4


def test_transcripts_root_honours_claude_config_dir():
    assert transcripts_root({"CLAUDE_CONFIG_DIR": "/x/cfg", "HOME": "/h"}) == Path(
        "/x/cfg/projects")
    assert transcripts_root({"HOME": "/h"}) == Path("/h/.claude/projects")
    assert project_key(Path("/home/user/plugintest/proj")) == "-home-user-plugintest-proj"


# --- bad input ---------------------------------------------------------------------------------

def test_bad_lines_are_counted_and_never_fatal(claude, cli):
    w = Writer().user().call(U(1, 1, 0, 1, 1))
    # Lines that cannot carry usage are skipped unparsed (the speed of the reader); these can.
    w.raw('{"type": "assistant", "message": {"id": "cut"').raw(
        '{"type": "brand-new-record", "role": "assistant"}')
    w.raw('{"type": "assistant", "message": {"id": "m", "model": "claude-opus-4-6", '
          '"content": []}}')
    w.raw('{"type": "assistant", "message": {"id": "m2", "model": "<synthetic>", "usage": '
          '{"input_tokens": 0, "output_tokens": 0}}}')
    path = w.write(claude)
    with open(path, "ab") as fh:
        fh.write(b'{"type": "user", "message": {"content": "caf\xe9 au lait"}}\n')
        fh.write(b'{"type": "assistant", "message": {"id": "half", "usage": {"input_tok')
    report = xray(cli)
    assert report["totals"]["calls"] == 1
    assert report["problems"] == {"bad_line": 1, "truncated": 1, "unknown_type": 1}


def test_empty_missing_and_many_small_inputs(claude, cli, tmp_path, monkeypatch):
    assert xray(cli)["files"] == 0
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nowhere"))
    nothing = cli("xray")
    assert nothing.code == 0 and "no Claude Code transcripts under" in nothing.out
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    folder = claude / "projects" / "-many"
    folder.mkdir(parents=True)
    line = Writer(cwd="/many").user().call(U(1, 2, 0, 3, 4)).lines
    for i in range(10_000):
        (folder / f"s{i}.jsonl").write_text(
            "\n".join(x.replace("s1", f"s{i}") for x in line) + "\n", encoding="utf-8")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "binary.jsonl").write_bytes(bytes(range(256)) * 10)
    report = xray(cli)
    assert report["files"] == 10_002
    assert report["totals"]["calls"] == 10_000 and report["totals"]["output"] == 40_000


# --- the replay --------------------------------------------------------------------------------

def _chain(tmp_path: Path, calls: list[Usage], first: str | None = None,
           boundaries: dict[int, int] | None = None) -> Any:
    w = Writer().user(first)
    for i, u in enumerate(calls):
        if boundaries and i in boundaries:
            w.boundary(boundaries[i])
        w.call(u)
    return read_chain(w.write(tmp_path), "p")


def test_the_replay_matches_a_hand_computed_session(tmp_path):
    chain = _chain(tmp_path, [U(10, 20_000, 0, 0, 500), U(10, 5_000, 0, 20_000, 500),
                              U(10, 30_000, 0, 25_000, 500), U(10, 5_000, 0, 55_000, 500)])
    # Real: input + 0.1 read + 1.25 write + 5 output, per call.
    real = (10 + 25_000 + 2_500) + (10 + 2_000 + 6_250 + 2_500) \
        + (10 + 2_500 + 37_500 + 2_500) + (10 + 5_500 + 6_250 + 2_500)
    assert real_cost(chain) == pytest.approx(real) == pytest.approx(95_040)
    fixed = fixed_context(chain)
    assert fixed == 20_010  # the first prompt; the first user message had no text
    # T = 50k: calls 1-3 as real (call 3's 55k is reached from 25k, not over F + H = 28k
    # before it); before call 4 (60k) it compacts: the summariser reads 55,010 cached and
    # writes 8,000 of output; call 4 then holds F + H + 5,000 = 33,010, of which F is cached.
    summarise = 0.1 * 55_010 + 5 * 8_000
    call4 = 10 + 0.1 * 20_010 + 1.25 * (33_010 - 20_010 - 10) + 5 * 500
    policy, compactions = policy_cost(chain, 50_000)
    assert compactions == 1
    assert policy == pytest.approx(27_510 + 10_760 + 42_510 + summarise + call4)
    assert policy == pytest.approx(147_029.5)  # a short session: compacting costs more
    assert policy_cost(chain, 400_000) == (pytest.approx(real), 0)


def test_compacting_early_saves_on_a_long_session(tmp_path):
    calls, prompt = [U(5, 30_000, 0, 0, 300)], 30_005
    for _ in range(60):
        calls.append(U(5, 4_000, 0, prompt - 5, 300))
        prompt += 4_000
    chain = _chain(tmp_path, calls)
    real = real_cost(chain)
    saving_100k = real - policy_cost(chain, 100_000)[0]
    assert saving_100k > 0.2 * real
    assert policy_cost(chain, 400_000)[0] == pytest.approx(real)


def test_a_real_compaction_above_the_threshold_never_happens_under_the_policy(tmp_path):
    calls = [U(5, 30_000, 0, 0, 100), U(5, 100_000, 0, 30_000, 100),
             U(5, 20_000, 0, 10_000, 100), U(5, 5_000, 0, 30_000, 100)]
    chain = _chain(tmp_path, calls, boundaries={2: 130_000})
    assert chain.compactions[0].after_calls == 2
    assert policy_cost(chain, 400_000)[0] == pytest.approx(real_cost(chain))
    # Under T = 100k the session compacted itself at call 2 (130k > 100k) and the real
    # boundary never happened: nothing grows across it.
    cost, n = policy_cost(chain, 100_000)
    assert n == 1 and cost > 0


def test_the_report_names_the_sweet_spot(claude, cli):
    w = Writer().user()
    prompt = 30_005
    w.call(U(5, 30_000, 0, 0, 300))
    for _ in range(80):
        w.call(U(5, 4_000, 0, prompt - 5, 300))
        prompt += 4_000
    w.write(claude)
    report = xray(cli)
    replay = report["replay"]
    assert replay["real_equiv"] == pytest.approx(report["totals"]["equiv"], abs=1)
    best = max(replay["thresholds"], key=lambda r: r["saving"])
    assert replay["best"] == best["threshold"]
    title = f"Compact at {best['threshold'] // 1000}k tokens"
    assert report["recommendations"][0]["title"] == title
    text = cli("xray", "--days", "0").out
    assert "← sweet spot" in text and "Recommendations" in text


# --- prices ------------------------------------------------------------------------------------

def test_a_dated_model_id_finds_its_family_price():
    prices = Prices.load()
    assert prices.price("claude-opus-4-6") == prices.price("claude-opus-4-6-20260101")
    assert prices.price("claude-opus-4-1-x") != prices.price("claude-opus-4-6")
    assert prices.dollars("nobody", U(1, 1, 1, 1, 1)) is None


# --- trim --------------------------------------------------------------------------------------

@pytest.fixture
def shop(tmp_path: Path, claude: Path) -> Path:
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "github": {"command": "gh-mcp"}, "puppeteer": {"command": "pptr"},
        "loremap": {"command": "loremap", "args": ["serve"]}}}), encoding="utf-8")
    Writer(cwd=str(project)).user().call(U(1, 1, 0, 1, 1),
                                         tools=("Read", "mcp__loremap__recall")).write(claude)
    return project


def test_trim_plans_applies_and_undoes_exactly_what_it_added(shop, cli):
    settings = shop / ".claude" / "settings.local.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}, "model": "opus"},
                                   indent=4), encoding="utf-8")
    original = settings.read_bytes()
    plan = json.loads(cli("xray", "trim", str(shop), "--json").out)
    assert plan["deny"] == ["mcp__github", "mcp__puppeteer"] and plan["used"] == {"loremap": 1}
    assert settings.read_bytes() == original
    applied = cli("xray", "trim", str(shop), "--apply")
    assert applied.code == 0, applied.err
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data["permissions"]["deny"] == ["Bash(rm:*)", "mcp__github", "mcp__puppeteer"]
    assert data["model"] == "opus"
    assert (shop / ".claude" / "settings.local.json.loremap-backup").read_bytes() == original
    again = json.loads(cli("xray", "trim", str(shop), "--json").out)
    assert again["deny"] == [] and again["already_denied"] == ["mcp__github", "mcp__puppeteer"]
    undone = cli("xray", "trim", str(shop), "--undo")
    assert undone.code == 0 and "removed mcp__github" in undone.out
    assert json.loads(settings.read_text(encoding="utf-8")) == {
        "permissions": {"deny": ["Bash(rm:*)"]}, "model": "opus"}
    assert "nothing to undo" in cli("xray", "trim", str(shop), "--undo").out


def test_trim_creates_and_removes_a_settings_file_it_made(shop, cli):
    settings = shop / ".claude" / "settings.local.json"
    assert cli("xray", "trim", str(shop), "--apply").code == 0
    assert settings.exists()
    assert cli("xray", "trim", str(shop), "--undo").code == 0
    assert not settings.exists()


def test_trim_refuses_a_settings_file_it_cannot_parse_and_changes_nothing(shop, cli):
    settings = shop / ".claude" / "settings.local.json"
    settings.write_text('{\n  // my comment\n  "model": "opus"\n}\n', encoding="utf-8")
    before = settings.read_bytes()
    result = cli("xray", "trim", str(shop), "--apply")
    assert result.code == 1 and "is not valid JSON (line 2" in result.err
    assert settings.read_bytes() == before
    assert not (shop / ".claude" / "loremap-trim.json").exists()


def test_trim_denies_nothing_without_transcripts_of_the_project(tmp_path, claude, cli):
    project = tmp_path / "fresh"
    project.mkdir()
    result = cli("xray", "trim", str(project), "--apply")
    assert result.code == 1 and "nothing is denied" in result.err


def test_after_a_real_compaction_the_policy_still_finds_its_own_context_cached(tmp_path):
    calls, prompt, boundaries = [U(5, 30_000, 0, 0, 300)], 30_005, {}
    for i in range(1, 60):
        if prompt > 160_000:  # the session compacted itself at 160k
            boundaries[i] = prompt
            calls.append(U(5, 10_000, 0, 30_000, 300))
            prompt = 40_005
            continue
        calls.append(U(5, 5_000, 0, prompt - 5, 300))
        prompt += 5_000
    chain = _chain(tmp_path, calls, boundaries=boundaries)
    real = real_cost(chain)
    cost, n = policy_cost(chain, 155_000)
    # Compacting at 155k instead of 160k changes little but the policy's own summarising calls
    # (the real ones ran in a sub-agent file, not in this chain): the real calls after the
    # real compaction read a small prompt, but the policy's own context stays cached.
    summarising = 0.1 * 155_000 + 5 * 8_000
    assert n >= 1 and abs(cost - real - n * summarising) < 0.05 * real


def test_the_summariser_of_a_compaction_above_t_never_runs_under_the_policy():
    summariser = read_chain(SAMPLES / "spotter-agent-acompact-e1f845.jsonl", "p")
    assert summariser.agent == "acompact-e1f845"
    assert summariser.calls[0].usage.prompt == 173_514
    assert policy_cost(summariser, 150_000) == (0.0, 0)
    assert policy_cost(summariser, 200_000) == (pytest.approx(real_cost(summariser)), 0)


def test_trim_never_denies_loremap_s_own_server_even_when_never_called(tmp_path, claude, cli):
    project = tmp_path / "shop"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "github": {"command": "gh-mcp"}, "loremap": {"command": "loremap", "args": ["serve"]},
        "memory": {"command": "/opt/bin/loremap", "args": ["serve"]}}}), encoding="utf-8")
    Writer(cwd=str(project)).user().call(U(1, 1, 0, 1, 1), tools=("Read",)).write(claude)
    plan = json.loads(cli("xray", "trim", str(project), "--json").out)
    assert plan["deny"] == ["mcp__github"] and plan["kept"] == ["loremap", "memory"]
    shown = cli("xray", "trim", str(project))
    assert "keeps loremap: loremap's own server is never denied" in shown.out
    assert cli("xray", "trim", str(project), "--apply").code == 0
    data = json.loads((project / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    assert data == {"permissions": {"deny": ["mcp__github"]}}
    report = xray(cli)
    assert report["unused_servers"] == ["github", "loremap", "memory"]
    turn_off = [r for r in report["recommendations"] if r["title"].startswith("Turn off")]
    assert "never called in these sessions: github. Their" in turn_off[0]["detail"]


def test_trim_apply_names_the_paths_it_wrote_and_undo_removes_the_folder_it_made(
        tmp_path, claude, cli):
    project = tmp_path / "my shop"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh"}}}),
                                       encoding="utf-8")
    Writer(cwd=str(project)).user().call(U(1, 1, 0, 1, 1), tools=("Read",)).write(claude)
    applied = cli("xray", "trim", str(project), "--apply")
    assert applied.code == 0, applied.err
    settings = project / ".claude" / "settings.local.json"
    assert f"created {settings}" in applied.out
    assert f"undo with `loremap xray trim '{project}' --undo`" in applied.out
    assert "PROJECT" not in applied.out
    undone = cli("xray", "trim", str(project), "--undo")
    assert undone.code == 0 and f"removed {project / '.claude'}" in undone.out
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json"]


def test_trim_undo_keeps_a_claude_folder_it_did_not_make(shop, cli):
    (shop / ".claude" / "commands.md").write_text("mine\n", encoding="utf-8")
    applied = cli("xray", "trim", str(shop), "--apply")
    assert applied.code == 0
    settings = shop / ".claude" / "settings.local.json"
    assert f"created {settings}" in applied.out
    assert cli("xray", "trim", str(shop), "--undo").code == 0
    assert sorted(p.name for p in (shop / ".claude").iterdir()) == ["commands.md"]
    (shop / ".claude" / "commands.md").unlink()
    assert cli("xray", "trim", str(shop), "--apply").code == 0
    assert cli("xray", "trim", str(shop), "--undo").code == 0
    assert (shop / ".claude").is_dir()  # empty now, but the user made it


def test_trim_apply_names_the_backup_of_an_existing_file(shop, cli):
    settings = shop / ".claude" / "settings.local.json"
    settings.write_text('{"model": "opus"}\n', encoding="utf-8")
    applied = cli("xray", "trim", str(shop), "--apply")
    assert f"backup of the previous file: {settings}.loremap-backup" in applied.out


# --- the report's records and formats ----------------------------------------------------------

REPORT_KEYS = ["generated_at", "root", "days", "since", "files", "problems", "totals", "shares",
               "by_model", "by_project", "by_day", "sessions", "session_count",
               "unpriced_models", "prices", "replay", "fixed_context", "tools", "mcp_servers",
               "unused_servers", "recommendations"]
COST_KEYS = ["calls", "input", "cache_write_5m", "cache_write_1h", "cache_read", "output",
             "equiv", "usd", "unpriced_calls"]


def test_the_json_keeps_its_shape(claude, cli):
    Writer().user().call(U(1, 10, 0, 100, 5), tools=("mcp__github__x",)).boundary(1000) \
        .call(U(1, 10, 0, 100, 5)).write(claude)
    report = xray(cli)
    assert list(report) == ["json_version", *REPORT_KEYS]
    assert list(report["totals"]) == COST_KEYS
    assert list(report["by_model"][0]) == ["model", *COST_KEYS]
    assert list(report["by_project"][0]) == ["project", *COST_KEYS, "cwd"]
    assert list(report["by_day"][0]) == ["day", *COST_KEYS]
    session = report["sessions"][0]
    assert list(session) == ["session", "project", "cwd", "start", "end", "model", *COST_KEYS,
                             "peak_context", "subagents", "fixed_context", "compactions",
                             "curve"]
    assert list(session["compactions"][0]) == ["at", "trigger", "pre_tokens", "after_calls"]
    assert session["curve"] == [[1, 111], [2, 111]]
    assert list(report["shares"]) == ["cache_read", "cache_write", "output", "input",
                                      "big_sessions"]
    assert list(report["replay"]) == ["handoff_tokens", "real_equiv", "thresholds", "best"]
    assert list(report["replay"]["thresholds"][0]) == ["threshold", "equiv", "saving",
                                                       "saving_share", "compactions"]
    assert list(report["fixed_context"]) == ["sessions", "median", "min", "max", "parts",
                                             "memory_files", "calls"]
    assert report["tools"] == [{"name": "mcp__github__x", "server": "github", "calls": 1}]
    assert report["mcp_servers"] == [{"name": "github", "calls": 1}]
    assert list(report["recommendations"][0]) == ["title", "saving_equiv", "saving_share",
                                                  "saving_usd", "detail"]


def test_money_is_never_zero_dollars_for_an_unpriced_model():
    from loremap.xray.formats import dollars, money, percent
    from loremap.xray.records import Cost

    assert money(None) == "not priced" and money(0.0) == "$0.00"
    assert money(0.001) == "< $0.01" and money(1234.5) == "$1,234.50"
    assert dollars(Cost(3, Usage(), 1.0, 0.0, 3)) == "not priced"
    assert dollars(Cost(3, Usage(), 1.0, 2.5, 1)) == "$2.50 + 1 unpriced calls"
    assert dollars(Cost(0, Usage(), 0.0, 0.0, 0)) == "$0.00"
    assert percent(0.006) == "0.6%" and percent(0.4871) == "48.7%"


def test_the_text_says_not_priced_for_an_unknown_model(claude, cli):
    Writer().user().call(U(500, 0, 0, 0, 10), model="mystery-model-9").write(claude)
    text = cli("xray", "--days", "0").out
    row = next(line for line in text.splitlines() if line.strip().startswith("mystery-model-9"))
    assert row.rstrip().endswith("not priced") and "$0.00" not in text
    assert "input-token equivalents, not priced (shipped prices.toml)" in text


def test_text_and_html_word_each_saving_the_same(claude, cli, tmp_path):
    w = Writer().user()
    prompt = 30_005
    w.call(U(5, 30_000, 0, 0, 300))
    for _ in range(80):
        w.call(U(5, 4_000, 0, prompt - 5, 300))
        prompt += 4_000
    w.write(claude)
    page = tmp_path / "x.html"
    text = cli("xray", "--days", "0", "--html", str(page)).out
    html = page.read_text(encoding="utf-8")
    in_text = re.findall(r"saves (\d+\.\d%) \(([\d,]+) equiv, ([^)]+)\)", text)
    in_html = re.findall(r"saves (\d+\.\d%) \(([\d,]+) equivalents, ([^)]+)\)", html)
    assert len(in_text) >= 2 and in_text == [(s, n, d.replace("&lt;", "<"))
                                              for s, n, d in in_html]
    shares = [r["saving_share"] for r in xray(cli)["recommendations"] if r["saving_equiv"]]
    assert [s for s, _, _ in in_text] == [f"{100 * s:.1f}%" for s in shares]
