"""The two flows people start by hand: "record what you learned" and "save a handoff".

Clients show prompts as slash commands (`/mcp__loremap__record` in Claude Code). Each expands
into a user message that tells the agent which tool to call and what makes a good entry, so the
result is the same whichever agent runs it.
"""

from __future__ import annotations

import mcp_types as types

from loremap.errors import UserError

PROMPTS = [
    types.Prompt(name="record", description="Record what this session learned as notes",
                 arguments=[types.PromptArgument(name="topic", required=False,
                                                 description="what to focus on")]),
    types.Prompt(name="handoff", description="Save a handoff so the next session resumes here",
                 arguments=[types.PromptArgument(name="next", required=False,
                                                 description="what the next session should do")]),
]

_RECORD = """\
Look back over this session and record what a future session on this project would need and
could not get from the code alone{focus}. Call the loremap `remember` tool once with all facts:
- one fact per note, typed: decision (what was chosen and why), bug (symptom, cause, fix),
  gotcha (what surprises and how to avoid it), procedure (steps that worked), error (message
  and remedy), concept (a term of this project);
- a one-line title that says the lesson, a body of a few sentences, the files it concerns;
- if a note already says something close, supersede it instead of adding another.
Do not record what the code, the commit history or the README already says. Then list the ids."""

_HANDOFF = """\
Save a handoff with the loremap `handoff` tool (action "save") so the next session can resume
without re-reading this one. Fill in:
- goal: what this work is for;
- state: what is done, what is in progress, what is verified;
- decisions: choices made and why (one per entry);
- next_steps: the concrete next actions, in order{next};
- open_questions: what is unresolved;
- files: the files that matter for the next step.
Be specific (names, paths, commands); leave out what the code already shows."""


def render(name: str, arguments: dict[str, str]) -> types.GetPromptResult:
    """The messages of prompt `name`, or `UserError` for an unknown name or argument."""
    allowed = {"record": {"topic"}, "handoff": {"next"}}
    if name not in allowed:
        raise UserError(f"unknown prompt {name!r}: use record or handoff")
    unknown = sorted(set(arguments) - allowed[name])
    if unknown:
        raise UserError(f"prompt {name}: unknown argument {', '.join(unknown)}")
    if name == "record":
        topic = arguments.get("topic", "").strip()
        text = _RECORD.format(focus=f", about {topic}" if topic else "")
    else:
        nxt = arguments.get("next", "").strip()
        text = _HANDOFF.format(next=f" (the user wants next: {nxt})" if nxt else "")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    description = next(p.description for p in PROMPTS if p.name == name)
    return types.GetPromptResult(description=description, messages=[message])
