"""`loremap verify CLAIM` and the MCP `verify` tool: what the memory says about a claim.

The evidence is the recall of the claim (the notes and code the engine finds for it, each with
why it was found, a file with its best-matching line). A verdict — supports, contradicts or
unknown, with a confidence — needs a judge that reads the claim against that evidence:

- the calling agent's own model, asked through MCP sampling when its client offers it (the
  MCP tool; `mcp/server.py`): the claim and the evidence, and a JSON answer asked back;
- no local model is built in: no natural-language-inference model ships in a Python package
  that loremap could use offline, so the CLI answers `unknown` with the evidence;
- never an invented verdict: no judge, a judge that does not answer, or an answer that does
  not parse is `unknown`, and the reason says which.

Confirming needs stronger evidence than doubting: a judge's `supports` counts only at a
confidence of `SUPPORT_AT` (0.80) or more, its `contradicts` at `CONTRADICT_AT` (0.60) or more
(cuba-memorys' thresholds); below, the verdict is `unknown` with the judge's leaning in the
reason. Being on topic is not support: the evidence is what the claim is about, whatever the
verdict.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput
from loremap.use.fresh import Freshness

if TYPE_CHECKING:
    from loremap.app import App

MAX_CLAIM = 2_000  # characters
EVIDENCE = 5  # items
EVIDENCE_BUDGET = 2_000  # tokens
SUPPORT_AT = 0.80
CONTRADICT_AT = 0.60
VERDICTS = ("supports", "contradicts", "unknown")
_OBJECT = re.compile(r"\{.*\}", re.S)


class Evidence(NamedTuple):
    id: str
    kind: str  # note, file, module
    title: str
    path: str
    text: str
    why: tuple[str, ...]


class Verified(NamedTuple):
    claim: str
    verdict: str  # supports | contradicts | unknown
    confidence: float  # the judge's, 0 without one
    judge: str  # "sampling" (the client's model) or "none"
    reason: str
    evidence: list[Evidence]
    warnings: list[str]


def check_claim(claim: str) -> str:
    text = " ".join(claim.split())
    if not text:
        raise InvalidInput("nothing to verify: give the claim as text")
    if len(text) > MAX_CLAIM:
        raise InvalidInput(f"the claim is {len(text):,} characters; verify one claim of at most "
                           f"{MAX_CLAIM:,} (nothing was searched)")
    return text


def gather(app: App, claim: str, freshness: Freshness) -> tuple[list[Evidence], list[str]]:
    """The evidence for `claim`: its recall, at most `EVIDENCE` items."""
    from loremap.use.recall import Question, recall

    done = recall(app, Question(claim, budget=EVIDENCE_BUDGET, limit=EVIDENCE), freshness)
    items = [] if done.found.abstained else done.found.items
    return [Evidence(i.id, i.kind, i.title, i.path, i.snippet, tuple(i.why)) for i in items], \
        done.warnings


def judge_prompt(claim: str, evidence: list[Evidence]) -> str:
    """What a judge model is asked: the claim, the evidence, and the JSON to answer with."""
    lines = ["Judge whether the evidence from a software project's memory supports or "
             "contradicts the claim. Being about the same topic is not support. Answer with "
             'JSON only: {"verdict": "supports" | "contradicts" | "unknown", "confidence": '
             'a number from 0 to 1, "reason": "one sentence"}.', "", f"Claim: {claim}", "",
             "Evidence:"]
    for n, item in enumerate(evidence, 1):
        lines.append(f"[{n}] {item.kind} {item.id}: {item.title}\n{item.text}")
    return "\n".join(lines)


def read_reply(text: str) -> tuple[str, float, str] | None:
    """(verdict, confidence, reason) from a judge's answer, or None when it does not parse."""
    found = _OBJECT.search(text)
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    verdict, confidence = data.get("verdict"), data.get("confidence")
    if verdict not in VERDICTS or isinstance(confidence, bool) or \
            not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        return None
    return str(verdict), float(confidence), " ".join(str(data.get("reason") or "").split())


def decide(claim: str, evidence: list[Evidence], reply: tuple[str, float, str] | None,
           judge: str, problem: str, warnings: list[str]) -> Verified:
    """The verdict from a judge's parsed reply (None: no judge or no usable answer, `problem`
    saying why), with the thresholds applied."""
    if not evidence:
        return Verified(claim, "unknown", 0.0, judge, "nothing in the memory speaks of it",
                        evidence, warnings)
    if reply is None:
        return Verified(claim, "unknown", 0.0, judge, problem, evidence, warnings)
    verdict, confidence, reason = reply
    needed = {"supports": SUPPORT_AT, "contradicts": CONTRADICT_AT}.get(verdict)
    if needed is not None and confidence < needed:
        reason = (f"the judge leaned to '{verdict}' at {confidence:.2f}, under the "
                  f"{needed:.2f} it takes; {reason}").rstrip("; ")
        verdict = "unknown"
    return Verified(claim, verdict, confidence, judge, reason, evidence, warnings)


def verify(app: App, claim: str, freshness: Freshness) -> Verified:
    """The evidence, and `unknown`: a front end without a judge (the CLI)."""
    claim = check_claim(claim)
    evidence, warnings = gather(app, claim, freshness)
    return decide(claim, evidence, None, "none",
                  "no judge here: the evidence is below for you to read (the MCP tool asks "
                  "the agent's own model when its client offers sampling)", warnings)


def render(done: Verified) -> list[str]:
    head = f"{done.verdict}" + (f" ({done.confidence:.2f}, {done.judge})"
                                if done.judge != "none" else "")
    lines = [f"{head}: {done.reason}" if done.reason else head]
    if done.evidence:
        lines.append("evidence:")
    for item in done.evidence:
        lines.append(f"- [{item.kind}] {item.title} ({item.id})"
                     + (f" — {'; '.join(item.why)}" if item.why else ""))
        if item.text:
            lines.append(f"  {item.text}")
    return lines
