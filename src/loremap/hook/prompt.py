"""Prompt submitted: recall what the project's memory holds for this prompt.

The search is the one `loremap search` and the recall tool run, within the hook's token
budget, and it abstains when nothing is relevant: then nothing at all is injected. Trivial
prompts ("yes", "continue", a slash command) are not searched. The index is not reconciled
with hand edits of note files here (that stats every note, ~45 ms at 10k): writes through
loremap index themselves, and the session-start hook and every tool call reconcile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from loremap.hook import log
from loremap.hook.context import additional_context, app_environ, fence, locate

# Prompts made only of these words carry no subject of their own ("yes", "ok go on",
# "thanks, continue"); they are compared lowercased, without punctuation.
ACKNOWLEDGEMENTS = frozenset("""
yes y yep yeah yup no n nope ok okay k kk sure fine go on ahead continue proceed next done
thanks thank you thx ty great good nice cool perfect lgtm retry again stop wait please do it
keep going carry sounds looks makes sense agreed approved ship that this right correct
""".split())
_PUNCTUATION = re.compile(r"[^\w\s]+")


def is_trivial(prompt: str) -> bool:
    """Whether `prompt` is an acknowledgement or a command rather than a question."""
    text = prompt.strip()
    if not text or text.startswith("/"):
        return True
    words = " ".join(_PUNCTUATION.sub(" ", text.lower()).split())
    return all(w in ACKNOWLEDGEMENTS for w in words.split())


def prompt(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    text = payload.get("prompt")
    if not isinstance(text, str) or is_trivial(text):
        return ""
    project = locate(payload, environ)
    if project is None:
        return ""
    from loremap.app import App
    from loremap.search import Request
    from loremap.search.render import TOOL_HINT, Packed, closing_line

    app = App.open(project.root, app_environ(project.root, environ))
    try:
        for notice in app.notices:
            log(f"prompt: {notice}", environ)
        s = app.settings
        request = Request(text[:4000], budget=s.get_int("hooks.recall_budget"),
                          limit=s.get_int("search.limit"))
        found = app.engine().recall(request)
    finally:
        app.close()
    if found.abstained or not found.items:
        return ""
    body = ["Recalled for this prompt from the project's memory:",
            *(item.text for item in found.items),
            closing_line(Packed(found.items, found.tokens, found.left_out), TOOL_HINT)]
    return additional_context("UserPromptSubmit", fence("recall", "\n".join(body)))
