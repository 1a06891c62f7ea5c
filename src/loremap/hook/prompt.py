"""Prompt submitted: recall what the project's memory holds for this prompt.

The search is the one `loremap search` and the recall tool run, within the hook's token
budget, and it abstains when nothing is relevant: then nothing at all is injected. Trivial
prompts ("yes", "continue", a slash command) are not searched. The index is not reconciled
with hand edits of note files here (that stats every note, ~45 ms at 10k): writes through
loremap index themselves, and the session-start hook and every tool call reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping

from loremap.hook import log
from loremap.hook.context import additional_context, fence, locate, open_app
from loremap.text.chatter import is_chatter

QUERY_CHARS = 4_000  # what a prompt contributes to the search: a pasted log says little more


def is_trivial(prompt: str) -> bool:
    """Whether `prompt` is a conversational reply or a slash command rather than a question."""
    text = prompt.strip()
    return text.startswith("/") or is_chatter(text)


def prompt(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    text = payload.get("prompt")
    if not isinstance(text, str) or is_trivial(text):
        return ""
    project = locate(payload, environ)
    if project is None:
        return ""
    from loremap.use.fresh import NEVER
    from loremap.use.recall import TOOL_HINT, Question, recall, render_recall

    with open_app(project.root, environ) as app:
        question = Question(text[:QUERY_CHARS],
                            budget=app.settings.get_int("hooks.recall_budget"),
                            session=project.session_id)
        done = recall(app, question, NEVER)
    for warning in done.warnings:
        log(f"prompt: {warning}", environ)
    if done.found.abstained or not done.found.items:
        return ""
    body = ["Recalled for this prompt from the project's memory:",
            *render_recall(done.found, TOOL_HINT)]
    return additional_context("UserPromptSubmit", fence("recall", "\n".join(body)))
