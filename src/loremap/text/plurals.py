"""Portuguese plurals the Snowball stemmer leaves apart from their singulars.

Snowball's Portuguese stemmer expects accented text, but the analyzer folds accents first (so
"sessao" typed on any keyboard meets "sessão"), and on folded text, or on short words whose
region for suffixes is empty, it stems many plurals differently from their singulars:
sessao/sessoes -> sessa/sesso, animal/animais -> animal/anim, papel/papeis -> papel/pap,
homem/homens -> hom/homens, barril/barris -> barril/barr, erro/erros -> erro/erros.

The rule is the grammar's, not a list of words: a folded word of four letters or more that ends
in `s` (never `ss`, which no Portuguese word ends in) may be a plural, and its singulars are the
word less its `s` and, for the endings that change, the singular endings they come from:
-oes -> -ao, -aes -> -ao, -ns -> -m, -ais -> -al, -eis -> -el/-il, -ois -> -ol, -uis -> -ul,
-is -> -il, -es -> (nothing: flor-es, mes-es, luz-es). Each singular of three letters or more is
stemmed too and its stem is one more token of the word, beside the word's own stem. Nothing is
taken away: every stem Snowball gives a word is still among its tokens, so the verb forms it
conflates stay together, and a word not ending in `s` (every singular) keeps its one token.

Measured against Debian's `wbrazilian` word list (275,502 inflected Brazilian Portuguese
words): the pairs of a singular and the plural that Portuguese grammar forms from it, both in the
list, are 91,890 (1,803 in -ão, 539 in -al, 343 in -el, 198 in -m, 55 in -il, ...). Snowball
alone stems 69,054 of them alike (75 %: none in -al, -el, -m, -il or -ol, 30 in -ão); with these
singulars a pair shares a token in 91,849 (99.96 %; left apart: two-letter words such as
"da"/"das" and "um"/"uns"; through the whole analyzer, whose stopwords drop some of the
words, 91,764, 99.86 %). The list's words have 1.40 tokens each on average (plurals are most
of an inflected list; running text has fewer), and the pairs of words that share a token grow
by 1.9 %, mostly forms of one verb ("condensemo"/"condensemos"). `bench/plurals.py` repeats the
measurement when the list is installed.
"""

from __future__ import annotations

from collections.abc import Callable

# A plural's ending -> the endings of the singulars it may come from, besides the word without
# its `s`; the first ending that matches decides.
_ENDINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("oes", ("ao",)), ("aes", ("ao",)), ("ns", ("m",)), ("ais", ("al",)),
    ("eis", ("el", "il")), ("ois", ("ol",)), ("uis", ("ul",)), ("is", ("il",)), ("es", ("",)),
)  # fmt: skip
_SHORTEST_PLURAL = 4
_SHORTEST_SINGULAR = 3


def singulars(word: str) -> list[str]:
    """Return the singulars `word` (folded, lowercase) is a Portuguese plural of, or none."""
    if len(word) < _SHORTEST_PLURAL or word[-1] != "s" or word[-2] == "s":
        return []
    found = [word[:-1]]
    for ending, replacements in _ENDINGS:
        if word.endswith(ending):
            found += [word[: -len(ending)] + replacement for replacement in replacements]
            break
    return list(dict.fromkeys(s for s in found if len(s) >= _SHORTEST_SINGULAR))


def stems_with_singulars(stem: Callable[[str], str]) -> Callable[[str], tuple[str, ...]]:
    """Wrap a Portuguese stemmer: a word's stem, then its singulars' stems, each once."""

    def stems(word: str) -> tuple[str, ...]:
        own = stem(word) or word
        if word[-1] != "s":
            return (own,)
        return tuple(dict.fromkeys([own, *(stem(s) or s for s in singulars(word))]))

    return stems
