"""`loremap verify CLAIM` and the MCP `verify` tool: what the memory says about a claim.

The evidence is the recall of the claim (the notes and code the engine finds for it, each with
why it was found, a file with its best-matching line). A verdict — supports, contradicts or
unknown, with a confidence — needs a judge that reads the claim against that evidence:

- a local natural-language-inference cross-encoder (`embed/nli.py`), when `verify.judge` names
  one (`loremap judge enable --model NAME|PATH`): each sentence of the evidence (a note's title
  and body sentences, a file's best-matching line) is a premise for the claim, and the verdict
  is the strongest entailment or contradiction among them, with the sentence that gave it;
- else the calling agent's own model, asked through MCP sampling when its client offers it
  (the MCP tool; `mcp/server.py`): the claim and the evidence, and a JSON answer asked back;
- else `unknown` with the evidence;
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
    from loremap.embed.nli import NliModel

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
    judge: str  # "nli NAME" (the local model), "sampling" (the client's model) or "none"
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


NO_JUDGE = ("no judge here: the evidence is below for you to read (`loremap judge enable "
            "--model NAME` sets a local one; the MCP tool also asks the agent's own model when "
            "its client offers sampling)")
PREMISES = 12  # sentences of one evidence item a judge reads
PREMISE_CHARS = (12, 600)  # shorter says nothing, longer is cut
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n\s*(?:[-*+]\s+|\d+[.)]\s+)?|\n")


def verify(app: App, claim: str, freshness: Freshness) -> Verified:
    """The evidence, and the local judge's verdict when `verify.judge` names one (else
    `unknown`: the MCP tool may still ask the client's model)."""
    claim = check_claim(claim)
    evidence, warnings = gather(app, claim, freshness)
    spec = app.settings.get_str("verify.judge").strip()
    if not spec:
        return decide(claim, evidence, None, "none", NO_JUDGE, warnings)
    from loremap.embed.nli import load_judge
    from loremap.errors import EmbedderUnavailable

    try:
        model = load_judge(spec, app.user.models, app.root)
    except EmbedderUnavailable as exc:
        return decide(claim, evidence, None, "none", f"the local judge cannot answer: {exc}",
                      [*warnings, f"degraded: {exc}"])
    reply = judged(model, claim, premises(app, evidence)) if evidence else None
    return decide(claim, evidence, reply, f"nli {model.name}", "", warnings)


def premises(app: App, evidence: list[Evidence]) -> list[tuple[Evidence, str]]:
    """The sentences a judge reads the claim against: a note's title and the sentences of
    its body (from the index), a file's or module's best-matching line."""
    rows = app.store.nodes([e.id for e in evidence if e.kind == "note"])
    out: list[tuple[Evidence, str]] = []
    for item in evidence:
        row = rows.get(item.id)
        text = f"{item.title}.\n{row.body}" if row is not None else item.text
        kept = [" ".join(part.split()) for part in _SENTENCE_END.split(text)]
        low, high = PREMISE_CHARS
        out += [(item, sentence[:high]) for sentence in
                dict.fromkeys(k for k in kept if len(k) >= low)][:PREMISES]
    return out


def judged(model: NliModel, claim: str, read: list[tuple[Evidence, str]]
           ) -> tuple[str, float, str] | None:
    """The reply of the local judge: the strongest entailment or contradiction of the claim by
    one premise, with that premise as the reason (None: nothing to read)."""
    if not read:
        return None
    found = model.infer([(premise, claim) for _, premise in read])
    entail = max(range(len(found)), key=lambda n: found[n].entailment)
    contra = max(range(len(found)), key=lambda n: found[n].contradiction)
    if found[entail].entailment >= found[contra].contradiction:
        verdict, at, confidence = "supports", entail, found[entail].entailment
    else:
        verdict, at, confidence = "contradicts", contra, found[contra].contradiction
    item, premise = read[at]
    return verdict, confidence, f"{item.kind} {item.id}: \"{premise}\""


class Judge(NamedTuple):
    """The local judge as `loremap judge status` shows it."""

    spec: str  # what verify.judge names ("" for none)
    labels: tuple[str, ...]  # the model's labels, when it loads
    problem: str  # why it cannot answer ("" when it can)
    warnings: tuple[str, ...] = ()  # what enabling it left to say (a folder of this machine)


def enable_judge(app: App, model: str, download_progress: bool = True) -> Judge:
    """Make `model` (a Hub name, downloaded now, or a model folder) the local judge: written
    to `verify.judge` once it has judged a pair."""
    from loremap.config import CONFIG_FILE
    from loremap.embed import is_hub_name, portable
    from loremap.embed.nli import load_judge
    from loremap.use.settings import write_setting

    spec = model.strip()
    if not spec:
        raise InvalidInput("which judge? give --model NAME (a Hugging Face NLI cross-encoder) "
                           "or the path of a model folder")
    if app.loremap_dir is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository")
    if is_hub_name(spec):
        from loremap.embed.hub import fetch

        fetch(spec, app.user.models, progress=download_progress)
    # The setting is committed: a folder is named from the project's root when it is in it.
    spec, warning = portable(spec, app.root)
    judge = load_judge(spec, app.user.models, app.root)
    judge.infer([("The build passes.", "The build passes.")])  # it answers, or nothing changes
    write_setting(app.loremap_dir / CONFIG_FILE, "verify.judge", spec)
    return Judge(spec, judge.labels, "", (warning,) if warning else ())


def judge_status(app: App) -> Judge:
    from loremap.embed.nli import load_judge
    from loremap.errors import EmbedderUnavailable

    spec = app.settings.get_str("verify.judge").strip()
    if not spec:
        return Judge("", (), "")
    try:
        return Judge(spec, load_judge(spec, app.user.models, app.root).labels, "")
    except EmbedderUnavailable as exc:
        return Judge(spec, (), str(exc))


def disable_judge(app: App) -> None:
    from loremap.config import CONFIG_FILE
    from loremap.use.settings import write_setting

    if app.loremap_dir is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository")
    write_setting(app.loremap_dir / CONFIG_FILE, "verify.judge", "")


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
