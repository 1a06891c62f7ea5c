"""The X-ray's token totals, checked against ccusage 18.0.11 and against transcripts whose totals
are known by construction (tests/transcripts.py), on generated data and on the real samples in
tests/fixtures/claude_code/transcripts (recorded Claude Code transcripts, sanitized).

How they differ, on purpose: Claude Code writes one API response as several `assistant` lines
(one per content block) sharing `message.id` + `requestId`, each repeating `message.usage`, and
`output_tokens` is only final on the last line (10, 10, 10, 299). Both tools count a call once,
but ccusage keeps the FIRST line of a call (its `processedHashes` skip every later line), so its
output total is the sum of first-line figures and falls short; the X-ray keeps the largest figure
of each field. Input, cache writes and cache reads repeat unchanged on every line, so those
totals must agree. ccusage has one cache-write figure (`cacheCreationTokens`, from
`cache_creation_input_tokens`); the X-ray splits it into 5-minute and 1-hour writes. A forked
session's file starts with a copy of its parent's records, IDs kept: ccusage 18 dedups across
files and counts those calls once, as it should.

ccusage runs through `npx -y ccusage@18.0.11` (the 20.x line needs a native binary the registry
does not serve) with `--offline` (bundled prices, no fetch), reading `$CLAUDE_CONFIG_DIR/projects`
like Claude Code. Its tests skip when `npx` is missing; the X-ray's when `loremap xray` is not
there yet.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli_process
from transcripts import Expected, Profile, generate, generate_bytes, project_key

CCUSAGE = "ccusage@18.0.11"
# The autouse fixture points HOME at a tmp dir; npm must still find the real cache.
NPM_CACHE = Path(os.path.expanduser("~")) / ".npm"
SAMPLES = Path(__file__).resolve().parent / "fixtures" / "claude_code" / "transcripts"
FIELDS = ("calls", "input", "cache_write_5m", "cache_write_1h", "cache_read", "output",
          "output_first")
TOKEN_FIELDS = FIELDS[1:6]

needs_npx = pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")


# --- helpers ------------------------------------------------------------------------------

def recount(config_dir: Path) -> dict[str, dict[str, int]]:
    """Totals per model (and "*" for all) straight from the files: one call per
    (message.id, requestId), the largest figure of each field; `output_first` is the call's
    first line. Written apart from the generator so that the generator cannot drift."""
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((config_dir / "projects").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            usage = (rec.get("message") or {}).get("usage") if rec.get("type") == "assistant" \
                else None
            if not usage or rec["message"].get("model") == "<synthetic>":
                continue
            key = (rec["message"]["id"], rec.get("requestId") or rec["uuid"])
            split = usage.get("cache_creation") or {}
            figures = {"input": usage["input_tokens"],
                       "cache_write_5m": split.get("ephemeral_5m_input_tokens", 0),
                       "cache_write_1h": split.get("ephemeral_1h_input_tokens", 0),
                       "cache_read": usage.get("cache_read_input_tokens", 0),
                       "output": usage["output_tokens"]}
            assert sum(split.values()) == usage.get("cache_creation_input_tokens", 0), line
            if key not in calls:
                calls[key] = {"model": rec["message"]["model"], "output_first":
                              usage["output_tokens"], **figures}
            else:
                for name, value in figures.items():
                    calls[key][name] = max(calls[key][name], value)
    totals: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
    for call in calls.values():
        for model in (call["model"], "*"):
            totals[model]["calls"] += 1
            for name in FIELDS[1:]:
                totals[model][name] += call[name]
    return dict(totals)


def expected_table(expected: Expected) -> dict[str, dict[str, int]]:
    table = {model: asdict(t) for model, t in expected.models.items()}
    table["*"] = asdict(expected.total)
    return table


def ccusage(config_dir: Path) -> dict[str, Any]:
    """`ccusage session --json --offline` on `config_dir`; its parsed output."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "npm_config_cache": str(NPM_CACHE),
           "npm_config_update_notifier": "false", "NO_COLOR": "1"}
    done = subprocess.run(["npx", "-y", CCUSAGE, "session", "--json", "--offline"],
                          cwd=config_dir, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def ccusage_models(report: dict[str, Any]) -> dict[str, dict[str, int]]:
    models: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for session in report["sessions"]:
        for row in session["modelBreakdowns"]:
            for name in ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens"):
                models[row["modelName"]][name] += row[name]
    return {model: dict(row) for model, row in models.items()}


def xray(config_dir: Path) -> dict[str, Any]:
    """`loremap xray --json --days 0` as a separate process, as a user runs it."""
    done = run_cli_process("xray", "--json", "--days", "0", cwd=config_dir,
                           env={"CLAUDE_CONFIG_DIR": str(config_dir)})
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def close(a: int, b: int, tolerance: float = 0.005) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def real_samples(config_dir: Path) -> dict[str, int]:
    """Lay the real samples out as Claude Code does: the short session, the 2.1.328 session
    (a `<synthetic>` reply only) and the compacted session whose summariser sub-agent holds
    the usage. Returns {"usage_lines": ..., "files": ...}."""
    files = {"spotter-short.jsonl": None,
             "cc-2.1.328-local-notloggedin.sanitized.jsonl": None,
             "spotter-compact-boundary-excerpt.jsonl": None,
             "spotter-agent-acompact-e1f845.jsonl": "acompact-e1f845"}
    usage_lines = 0
    for name, agent in files.items():
        lines = (SAMPLES / name).read_text(encoding="utf-8").splitlines()
        head = next(json.loads(line) for line in lines if '"cwd"' in line)
        folder = config_dir / "projects" / project_key(head["cwd"])
        target = folder / f"{head['sessionId']}.jsonl"
        if agent:
            target = folder / head["sessionId"] / "subagents" / f"agent-{agent}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLES / name, target)
        usage_lines += sum('"usage"' in line and '"type":"assistant"' in line for line in lines)
    return {"usage_lines": usage_lines, "files": len(files)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Expected]:
    """A corpus that exercises every case: split calls, compactions, sub-agents, a model
    switch, both cache TTLs, `<synthetic>` replies."""
    root = tmp_path_factory.mktemp("claude")
    profile = Profile(compact_at=60_000, synthetic_rate=0.03, switch_rate=0.2, fork_rate=0)
    return root, generate(root, sessions=6, calls_per_session=60, seed=7, profile=profile)


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Expected]:
    """Every session resumed once into a fork whose file starts with a copy of its records."""
    root = tmp_path_factory.mktemp("forked")
    return root, generate(root, sessions=4, calls_per_session=30, seed=5,
                          profile=Profile(fork_rate=1.0))


def copied_calls(root: Path) -> int:
    """API calls (message.id, requestId) whose lines appear in more than one file."""
    files: dict[tuple[str, str], set[Path]] = defaultdict(set)
    for path in (root / "projects").rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("type") == "assistant" and rec.get("requestId"):
                files[(rec["message"]["id"], rec["requestId"])].add(path)
    return sum(len(paths) > 1 for paths in files.values())


# --- the generator, without npm ---------------------------------------------------------

def test_generated_totals_match_an_independent_recount_of_the_files(
        corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    assert recount(root) == expected_table(expected)


def test_generated_corpus_holds_every_case_the_readers_must_handle(
        corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    assert set(expected.models) == {"claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5"}
    assert expected.split_calls > expected.total.calls / 2
    assert expected.total.output_first < expected.total.output
    assert expected.compactions >= 3 and expected.subagents > expected.compactions
    assert expected.synthetic >= 1
    assert expected.total.cache_write_5m > 0 and expected.total.cache_write_1h > 0
    assert any(name.startswith("mcp__") for name in expected.tools)
    files = list((root / "projects").rglob("*.jsonl"))
    assert sum("subagents" in p.parts for p in files) == expected.subagents
    assert len(files) == expected.files


def test_generation_is_deterministic_by_seed(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", sessions=2, calls_per_session=25, seed=3)
    second = generate(tmp_path / "b", sessions=2, calls_per_session=25, seed=3)
    assert first == second
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jsonl"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.jsonl"))
    assert files_a == files_b
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
               for f in files_a)


def test_forked_sessions_copy_calls_that_count_once(forked: tuple[Path, Expected]) -> None:
    root, expected = forked
    assert expected.forks >= 3 and copied_calls(root) > 10
    assert recount(root) == expected_table(expected)


def test_size_targeted_generation_reaches_its_target_and_stays_exact(tmp_path: Path) -> None:
    expected = generate_bytes(tmp_path, 3_000_000, seed=11)
    on_disk = sum(p.stat().st_size for p in (tmp_path / "projects").rglob("*.jsonl"))
    assert expected.bytes == on_disk >= 3_000_000
    assert recount(tmp_path) == expected_table(expected)
    assert Expected.from_json(json.loads(json.dumps(expected.to_json()))) == expected


# --- ccusage 18.0.11 ------------------------------------------------------------------------

@needs_npx
def test_ccusage_counts_each_call_once_from_its_first_line(corpus: tuple[Path, Expected]
                                                           ) -> None:
    root, expected = corpus
    totals = ccusage(root)["totals"]
    assert totals["inputTokens"] == expected.total.input
    assert totals["cacheCreationTokens"] == expected.total.cache_write
    assert totals["cacheReadTokens"] == expected.total.cache_read
    # First line of each call, not its final output: ccusage undercounts output.
    assert totals["outputTokens"] == expected.total.output_first < expected.total.output


@needs_npx
def test_ccusage_model_breakdowns_match_the_generator(corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    models = ccusage_models(ccusage(root))
    assert models == {model: {"inputTokens": t.input, "outputTokens": t.output_first,
                              "cacheCreationTokens": t.cache_write,
                              "cacheReadTokens": t.cache_read}
                      for model, t in expected.models.items()}


@needs_npx
def test_ccusage_counts_a_call_copied_into_a_forked_session_once(
        forked: tuple[Path, Expected]) -> None:
    root, expected = forked
    totals = ccusage(root)["totals"]
    assert (totals["inputTokens"], totals["cacheCreationTokens"], totals["cacheReadTokens"],
            totals["outputTokens"]) == (expected.total.input, expected.total.cache_write,
                                        expected.total.cache_read, expected.total.output_first)


@needs_npx
def test_ccusage_agrees_with_a_recount_of_the_real_samples(tmp_path: Path) -> None:
    layout = real_samples(tmp_path)
    truth = recount(tmp_path)["*"]
    # Meaningful only if usage lines repeat: 6 lines carry usage, 2 distinct calls.
    assert truth["calls"] == 2 < layout["usage_lines"]
    totals = ccusage(tmp_path)["totals"]
    assert (totals["inputTokens"], totals["cacheCreationTokens"], totals["cacheReadTokens"],
            totals["outputTokens"]) == (truth["input"],
                                        truth["cache_write_5m"] + truth["cache_write_1h"],
                                        truth["cache_read"], truth["output_first"])


# --- the X-ray -----------------------------------------------------------------------------

def test_xray_totals_equal_the_generated_totals_exactly(corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    report = xray(root)
    assert {k: report["totals"][k] for k in FIELDS[:6]} == \
        {k: v for k, v in asdict(expected.total).items() if k != "output_first"}
    by_model = {row["model"]: {k: row[k] for k in FIELDS[:6]} for row in report["by_model"]}
    assert by_model == {model: {k: v for k, v in asdict(t).items() if k != "output_first"}
                        for model, t in expected.models.items()}


def test_xray_finds_every_file_compaction_and_tool_call(corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    report = xray(root)
    assert report["files"] == expected.files
    assert sum(len(s["compactions"]) for s in report["sessions"]) == expected.compactions
    assert {row["name"]: row["calls"] for row in report["tools"]} == expected.tools


@needs_npx
def test_xray_agrees_with_ccusage_except_for_the_output_of_split_calls(
        corpus: tuple[Path, Expected]) -> None:
    root, expected = corpus
    ours, theirs = xray(root)["totals"], ccusage(root)["totals"]
    assert close(ours["input"], theirs["inputTokens"])
    assert close(ours["cache_write_5m"] + ours["cache_write_1h"], theirs["cacheCreationTokens"])
    assert close(ours["cache_read"], theirs["cacheReadTokens"])
    assert ours["output"] == expected.total.output
    assert theirs["outputTokens"] == expected.total.output_first


@needs_npx
def test_xray_agrees_with_ccusage_and_a_recount_on_the_real_samples(tmp_path: Path) -> None:
    real_samples(tmp_path)
    truth = recount(tmp_path)["*"]
    ours, theirs = xray(tmp_path)["totals"], ccusage(tmp_path)["totals"]
    assert {k: ours[k] for k in TOKEN_FIELDS} == {k: truth[k] for k in TOKEN_FIELDS}
    assert ours["calls"] == truth["calls"]
    assert ours["input"] == theirs["inputTokens"]
    assert ours["cache_write_5m"] + ours["cache_write_1h"] == theirs["cacheCreationTokens"]
    assert ours["cache_read"] == theirs["cacheReadTokens"]
    assert theirs["outputTokens"] == truth["output_first"]


def test_xray_counts_a_call_copied_into_a_forked_session_once(
        forked: tuple[Path, Expected]) -> None:
    root, expected = forked
    totals = xray(root)["totals"]
    assert {k: totals[k] for k in FIELDS[:6]} == \
        {k: v for k, v in asdict(expected.total).items() if k != "output_first"}
