"""`loremap verify` and the MCP `verify` tool: the evidence for a claim, and a verdict only
from a judge — the client's own model through MCP sampling (the SDK's own client, with a
scripted model) — with the thresholds applied; never an invented verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from loremap.use.verify import MAX_CLAIM, Evidence, decide, read_reply

NOTES = [("decision", "Refunds are issued within five days",
          "A refund reaches the card within five working days; the bank adds none."),
         ("gotcha", "Coupons apply after the cart total",
          "apply_coupon runs on the summed total, never per line.")]


@pytest.fixture
def shop(project: Path, cli) -> Path:
    for note_type, title, body in NOTES:
        assert cli("remember", "-t", note_type, "--title", title, "-m", body).code == 0
    return project


def test_a_reply_is_read_strictly_and_confirming_needs_more_than_doubting():
    assert read_reply('Sure. {"verdict": "supports", "confidence": 0.9, "reason": "x"}') == (
        "supports", 0.9, "x")
    for bad in ("no json", '{"verdict": "maybe", "confidence": 0.9}',
                '{"verdict": "supports", "confidence": 1.5}',
                '{"verdict": "supports", "confidence": true}', '["supports"]'):
        assert read_reply(bad) is None, bad
    evidence = [Evidence("decision-x", "note", "X", ".loremap/notes/decision-x.md", "x", ())]
    assert decide("c", evidence, ("supports", 0.79, "r"), "sampling", "", []).verdict == \
        "unknown"
    assert decide("c", evidence, ("supports", 0.8, "r"), "sampling", "", []).verdict == \
        "supports"
    assert decide("c", evidence, ("contradicts", 0.6, "r"), "sampling", "", []).verdict == \
        "contradicts"
    weak = decide("c", evidence, ("contradicts", 0.5, "r"), "sampling", "", [])
    assert weak.verdict == "unknown" and "leaned to 'contradicts' at 0.50" in weak.reason
    assert decide("c", [], ("supports", 1.0, "r"), "sampling", "", []).verdict == "unknown"


def test_the_cli_gives_the_evidence_and_never_a_verdict_without_a_judge(shop, cli):
    done = json.loads(cli("verify", "refunds", "take", "five", "days", "--json").out)
    assert done["verdict"] == "unknown" and done["judge"] == "none"
    assert done["evidence"][0]["title"] == "Refunds are issued within five days"
    off = json.loads(cli("verify", "the", "moon", "is", "made", "of", "cheese", "--json").out)
    assert off["verdict"] == "unknown" and off["evidence"] == []
    assert off["reason"] == "nothing in the memory speaks of it"
    big = cli("verify", "x" * (MAX_CLAIM + 1))
    assert big.code == 1 and "verify one claim of at most 2,000" in big.err


def run(project: Path, claim: str, model: Any, mode: str = "legacy") -> tuple[str, bool]:
    out: list[tuple[str, bool]] = []
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        prompt = params.messages[0].content.text
        asked.append(prompt)
        return model(prompt)

    async def main() -> None:
        async with Client(build_server(Projects(project), "full"), mode=mode,
                          sampling_callback=sampling) as c:
            result = await c.call_tool("verify", {"claim": claim})
            out.append((result.content[0].text, bool(result.is_error)))

    anyio.run(main)
    return out[0]


def answer(verdict: str, confidence: float) -> Any:
    def model(prompt: str) -> types.CreateMessageResult:
        text = json.dumps({"verdict": verdict, "confidence": confidence,
                           "reason": "the note says so"})
        return types.CreateMessageResult(role="assistant", model="scripted",
                                         content=types.TextContent(type="text", text=text))
    return model


def test_the_client_s_model_judges_through_sampling(shop):
    text, error = run(shop, "refunds take five days", answer("supports", 0.93))
    assert not error and text.startswith("supports (0.93, sampling): the note says so")
    assert "Refunds are issued within five days" in text
    text, _ = run(shop, "refunds take ten days", answer("contradicts", 0.7))
    assert text.startswith("contradicts (0.70, sampling)")
    text, _ = run(shop, "refunds are instant", answer("supports", 0.6))
    assert text.startswith("unknown (0.60, sampling): the judge leaned to 'supports'")


def test_a_refused_or_garbled_sampling_is_unknown_with_the_evidence(shop):
    def refuses(prompt: str) -> types.ErrorData:
        return types.ErrorData(code=-1, message="the user declined")

    text, error = run(shop, "refunds take five days", refuses)
    assert not error and text.startswith("unknown") and "did not answer" in text
    assert "Refunds are issued within five days" in text

    def garbled(prompt: str) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="scripted",
                                         content=types.TextContent(type="text", text="yes!"))

    text, _ = run(shop, "refunds take five days", garbled)
    assert text.startswith("unknown") and "not with a verdict in JSON" in text


def test_without_sampling_the_tool_gives_the_evidence(shop):
    out: list[str] = []

    async def main() -> None:
        async with Client(build_server(Projects(shop), "full")) as c:
            result = await c.call_tool("verify", {"claim": "refunds take five days"})
            out.append(result.content[0].text)

    anyio.run(main)
    assert out[0].startswith("unknown: no judge here") and "Refunds are issued" in out[0]


def test_a_client_on_the_2026_protocol_is_asked_through_an_input_required_round_trip(shop):
    # Protocol 2026-07-28 has no request of the server's own: the tool answers
    # InputRequiredResult with the sampling request, and the SDK's client answers it through
    # its sampling callback and calls the tool again with the model's answer.
    text, error = run(shop, "refunds take five days", answer("supports", 0.99), mode="auto")
    assert not error and text.startswith("supports (0.99, sampling): the note says so")
    assert "Refunds are issued within five days" in text
    text, _ = run(shop, "refunds take five days", answer("supports", 0.5), mode="auto")
    assert text.startswith("unknown (0.50, sampling): the judge leaned to 'supports'")

