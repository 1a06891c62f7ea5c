"""Conversational replies: the one list of words that carry no question of their own.

A prompt made only of these ("yes", "ok go on", "thanks, continue", "hi") is not a search: the
prompt hook skips it before opening the index, and the engine abstains on it whichever front end
asked. Both read this list (the engine through its own analyzer, so stems and accents match the
index's languages); it is declared nowhere else.
"""

from __future__ import annotations

import re

CHATTER_WORDS = frozenset("""
yes y yep yeah yup no n nope ok okay k kk sure fine go on ahead continue proceed next done
thanks thank you thx ty great good nice cool perfect awesome lgtm retry again stop wait please
do it keep going carry sounds looks makes sense agree agreed approved ship that this right
correct hi hello hey
""".split())
_PUNCTUATION = re.compile(r"[^\w\s]+")


def is_chatter(text: str) -> bool:
    """Whether `text` is empty or made only of conversational replies (compared lowercased,
    without punctuation)."""
    return all(w in CHATTER_WORDS for w in _PUNCTUATION.sub(" ", text.lower()).split())
