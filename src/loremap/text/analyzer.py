"""Turn prose and code into the search terms loremap indexes and queries with.

SQLite FTS5 only splits on punctuation, so on its own it cannot match `applyCoupon` to "apply
coupon", `café` to "cafe" or "running" to "runs". This analyzer does that work in Python, once,
and the same way for documents and queries: the index stores our tokens (FTS5's `unicode61`
tokenizer with `tokenchars '_'` keeps each one whole) and a query is built from `terms()`.

Rules, in order:

1. Fold: NFKD, drop the combining diacritics (U+0300-036F and the other diacritic blocks), then
   NFC so scripts that NFKD only splits apart (Hangul, kana with dakuten) come back whole.
   ASCII text skips this. Case is kept until step 4 has used it.
2. Chunk: a chunk is a run of word characters (`\\w`: letters, digits, `_`) joined by single
   `.`, `-`, `/` or `\\` (`src/auth/login.ts`, `session-cookies`, `v1.2`). Everything else,
   apostrophes included, separates chunks.
3. Segment: `/` and `\\` split a chunk into path segments; each segment is analysed on its own.
4. Parts: a segment splits on `.`, `-` and `_`, then on case changes (`applyCoupon` -> apply,
   Coupon; `HTTPServerError` -> HTTP, Server, Error) and on letter/digit boundaries
   (`sha256sum` -> sha, 256, sum). Case changes are only seen in ASCII letters; other scripts
   split at digit boundaries only. Parts are lowercased, and the Latin letters that have no
   decomposition are spelled in ASCII (ß -> ss, æ -> ae, ø -> o, ł -> l, ...).
5. Compound: a segment with two or more parts first emits all of its parts, lowercased, joined
   by `_` (`apply_coupon`, `max_note_bytes`, `session_cookies`, `login_ts`, `sha_256_sum`,
   `v_2`). Compounds are neither stopword-filtered nor stemmed, so every spelling of one
   identifier (camel, snake, kebab) meets on the same compound.
6. Part tokens: each part, lowercased, is dropped if it is a single ASCII letter (`v` in `v2`,
   the `s` of "it's") or a stopword of any configured language; otherwise it is stemmed with
   every configured language's Snowball stemmer, in the order configured, and each distinct
   stem is one token (`sessions` -> session, sessions with en and pt, before rule 8). Digit
   runs are kept, whatever their length, and other scripts' one-letter words (`中`) are kept
   too. For English an irregular verb form first becomes its verb (`written` -> write, `went`
   -> go, `built` -> build; `lemmas.py`), which Snowball's suffix rules cannot do.
7. Portuguese plurals: for Portuguese a word that may be a plural also gets the tokens of the
   singulars it may come from (`sessoes` -> sesso, sessa, the token of `sessao`), each singular
   analysed as that word would be, by the grammar's endings (`plurals.py`, which says what the
   rule was measured against), so a plural meets its singular on folded text, where Snowball
   alone often keeps them apart.
8. A stem that is the word itself says only that one language found no ending to strip: when
   another language's stem of the word differs from it, the word itself is no token
   (`running` -> run with en and pt, not running beside run), so a text in one language keeps
   nearly the tokens that language alone gives it. Each stem is then stemmed by the other
   languages too (`coding` -> code, cod), so two words one language joins still meet
   (`code` -> cod alone). Measured on the English eval data with en,pt (docs/search.md):
   keeping every stem cost 1.34 times the tokens and more recall; yielding without the
   cross-stem parted 4 % of the word pairs English joins.

A document and a query go through the same steps, so a word meets its other forms whichever
language stems them alike. One language without a plural step (English, the default) gives one
token per part, exactly as rules 2 did.

A change to these rules changes the tokens of text already indexed: bump `RULES`, and an index
recorded with another `Analyzer.signature` is rebuilt when it is opened.

Tokens come out in text order with duplicates kept (BM25 counts them). For Latin-script input
every token matches `[a-z0-9_]+`; other scripts keep their letters, lowercased (Cyrillic, Greek,
CJK). Indic vowel signs are not word characters for `\\w` (nor for FTS5), so such words split
there, on both sides of the index alike.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from itertools import chain

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type information

from loremap.errors import InvalidInput
from loremap.text.lemmas import IRREGULAR
from loremap.text.plurals import singulars
from loremap.text.stopwords import stopwords_for

_CHUNK = re.compile(r"\w+(?:[./\\-]\w+)*")
_SEGMENT_SEP = re.compile(r"[/\\]")
# An acronym before a capitalised word, a (capitalised) lowercase or non-ASCII run, an acronym,
# a digit run. `[^\W\dA-Z_]` is a letter that is not ASCII uppercase.
_PART = re.compile(r"[A-Z]+(?=[A-Z][^\W\dA-Z_])|[A-Z]?[^\W\dA-Z_]+|[A-Z]+|\d+")
_DIACRITICS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
# Lowercase Latin letters NFKD leaves whole; applied after case splitting, so `Æther` stays
# one part (a two-letter `AE` would look like an acronym to the camel-case rule).
_UNDECOMPOSED = str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th",
     "ı": "i", "ħ": "h", "ŧ": "t", "ĸ": "q", "ŋ": "ng"}
)  # fmt: skip
_ASCII_LETTERS = frozenset(string.ascii_lowercase)
# ASCII characters that can never be inside a chunk become spaces, so one C-level `split()` cuts
# text into words that are (nearly always) whole chunks: far fewer distinct memo keys.
_SPACE_OUT = str.maketrans(
    dict.fromkeys(
        set(map(chr, range(128))) - set(string.ascii_letters + string.digits + "_./\\-"), " "
    )
)

# The version of the rules above; part of `Analyzer.signature`, which the index records.
RULES = 3
# Rules 3 stem with every language (6) and add the Portuguese plurals (7). A single language
# without a plural step gets the tokens of rules 2, so its signature keeps that number and its
# index is not rebuilt for a change that did not touch it.
_RULES_OF_ONE = 2

# Once this many distinct words are memoised the memo starts over: at ~240 bytes an entry that
# caps it near 30 MB, and holds the vocabulary of ~10,000 notes between two resets.
_CACHE_LIMIT = 131_072


def fold(text: str) -> str:
    """Strip accents and compatibility forms from `text`, keeping its case.

    Letters without a decomposition (ß, æ, ø, ...) are mapped later, per part, once lowercase.
    """
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", decomposed))


def _lower(part: str) -> str:
    lowered = part.lower()
    return lowered if lowered.isascii() else lowered.translate(_UNDECOMPOSED)


def _parts(segment: str) -> list[str]:
    return [_lower(part) for part in _PART.findall(segment)]


# The names Snowball accepts for the languages with a step of their own before stemming.
_ENGLISH = frozenset({"en", "eng", "english"})
_PORTUGUESE = frozenset({"pt", "por", "portuguese"})

Stems = Callable[[str], tuple[str, ...]]


def _make_stemmer(language: str) -> Callable[[str], str]:
    try:
        stemmer = Stemmer.Stemmer(language)
    except (KeyError, UnicodeError):  # KeyError: unknown name; UnicodeError: not even ASCII
        valid: list[str] = Stemmer.algorithms()
        raise InvalidInput(
            f"unknown language {language!r}; use an ISO 639-1 code (en, pt, es) or one of: "
            + ", ".join(valid)
        ) from None
    # PyStemmer is untyped; the annotation is where its `Any` becomes a checked type.
    stem_word: Callable[[str], str] = stemmer.stemWord
    return stem_word


def _language_stem(language: str) -> Callable[[str], str]:
    """One part's stem in `language`; English meets irregular verbs first (rule 6). `or part`
    guards the (never seen) empty stem."""
    stem = _make_stemmer(language)
    if language in _ENGLISH:
        return lambda part: stem(IRREGULAR.get(part, part)) or part
    return lambda part: stem(part) or part


def _all_stems(each: Sequence[Callable[[str], str]], plurals: bool) -> Stems:
    """One part's tokens: the distinct stems of every language (rule 6), the tokens of the
    singulars a Portuguese plural may come from (rule 7), less the part itself when any of them
    differs from it (rule 8)."""
    if len(each) == 1 and not plurals:
        one = each[0]
        return lambda part: (one(part),)

    def stems(part: str) -> tuple[str, ...]:
        found: list[str] = []
        for i, stem in enumerate(each):
            own = stem(part)
            if own == part:
                continue  # rule 8
            found.append(own)
            # The stem as the other languages stem it: `coded` (English: code) holds `cod`, which
            # is all Portuguese leaves of `code`, so the two still meet.
            found += [again for j, other in enumerate(each)
                      if j != i and (again := other(own)) != own]
        if plurals and part[-1] == "s":
            # A singular is analysed as that word is, so a plural holds every token of its
            # singular. Each singular is shorter than its plural: the recursion ends.
            for singular in singulars(part):
                found += stems(singular)
        return tuple(dict.fromkeys(found)) or (part,)

    return stems


class _Memo(dict[str, tuple[str, ...]]):
    """Memo of word -> tokens, where a word is a whitespace-free piece of folded text.

    A miss analyses the word through dict's `__missing__` hook; hits stay in C. A word that is
    more than one chunk (`login(),`) is analysed chunk by chunk through the same memo.
    """

    def __init__(self, stems: Stems, stopwords: frozenset[str]) -> None:
        super().__init__()
        self._stems = stems
        self._stopwords = stopwords

    def __missing__(self, word: str) -> tuple[str, ...]:
        if word.isalpha() and word[1:].islower():
            # "running", "Coupon", "привет": a single part, so the regexes would change nothing.
            result = self._part(_lower(word))
        else:
            chunks = _CHUNK.findall(word)
            if len(chunks) != 1:
                result = tuple(chain.from_iterable(map(self.__getitem__, chunks)))
            elif chunks[0] != word:
                result = self[chunks[0]]
            else:
                result = self._chunk(word)
        self[word] = result
        return result

    def _chunk(self, chunk: str) -> tuple[str, ...]:
        tokens: list[str] = []
        for segment in _SEGMENT_SEP.split(chunk):
            parts = _parts(segment)
            if len(parts) > 1:
                tokens.append("_".join(parts))
            for part in parts:
                tokens.extend(self._part(part))
        return tuple(tokens)

    def _part(self, part: str) -> tuple[str, ...]:
        if part in self._stopwords or (len(part) == 1 and part in _ASCII_LETTERS):
            return ()
        # Only `\w` characters get here, never a lone surrogate, so the stemmers' UTF-8
        # encoding cannot fail.
        return self._stems(part)


class Analyzer:
    """Tokenise text for the index and for queries, identically.

    `languages` are ISO 639-1 codes or Snowball names; each stems every part (a part has a
    token per distinct stem) and contributes stopwords. Every language must be one PyStemmer
    knows, else `InvalidInput`.
    """

    def __init__(self, languages: Sequence[str] = ("en",)) -> None:
        names = [language.strip().lower() for language in languages]
        if not names:
            raise InvalidInput("at least one language is needed for the analyzer, e.g. 'en'")
        self.languages: tuple[str, ...] = tuple(names)
        self._rules = (RULES if len(names) > 1 or _PORTUGUESE.intersection(names)
                       else _RULES_OF_ONE)
        # A language named twice ("pt", "portuguese") stems once.
        distinct = dict.fromkeys("english" if name in _ENGLISH else
                                 "portuguese" if name in _PORTUGUESE else name for name in names)
        stems = _all_stems([_language_stem(name) for name in distinct],
                           plurals="portuguese" in distinct)
        self._cache = _Memo(stems, stopwords_for(names))

    @property
    def signature(self) -> str:
        """What decides the tokens: the languages and the version of the rules (an index built
        under another signature must be rebuilt)."""
        return f"{','.join(self.languages)} (rules {self._rules})"

    def tokens(self, text: str) -> list[str]:
        """Return the index/query tokens of `text`, in order, duplicates kept.

        Never raises on a `str`, whatever it holds (NUL, lone surrogates, any script).
        """
        if len(self._cache) > _CACHE_LIMIT:
            self._cache.clear()
        words = fold(text).translate(_SPACE_OUT).split()
        return list(chain.from_iterable(map(self._cache.__getitem__, words)))

    def terms(self, text: str) -> list[str]:
        """Return the distinct tokens of `text` in first-seen order, for building a query."""
        return list(dict.fromkeys(self.tokens(text)))
