"""A question's words that name the language of the project's code.

Every file written in Python is about Python whether or not its text says so. Asked "python
remove none values from a list" of a Python project, "python" tells no file apart; counted by
its letters it is a rare word all the same (330 of CoSQA's 6,267 functions say it: those that
check a version or call an interpreter), and a plain BM25 pulls exactly those files up. So a
word naming a language is held, for the engine, by every file in that language: its document
frequency is at least their count, which is what its IDF and the question's IDF mass
(abstention) read, and it is not searched while those files are half the nodes or more (its
IDF would be below ln 2; it would only pick out the few files that happen to spell it).

Measured with `python bench/retrieval.py` (docs/search.md has the figures): CoSQA dev's MRR
gains; LoCoMo's conversations hold no code, so nothing there changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from loremap.text import Analyzer

# The words people call each language the code map reads by (its language ids, the `files`
# table's `language`). A word shared by two languages counts the files of both. Go is only
# "golang": "go" is a verb of every conversation ("went" meets it too). A name with a version
# ("python3") is read as the name and the number, so only the name is listed.
NAMES = {
    "python": "python py cpython",
    "javascript": "javascript js ecmascript",
    "typescript": "typescript ts",
    "tsx": "typescript tsx",
    "go": "golang",
    "rust": "rust",
    "java": "java",
    "kotlin": "kotlin",
    "cpp": "cpp",
    "csharp": "csharp",
    "ruby": "ruby",
    "php": "php",
}


def tokens(analyzer: Analyzer) -> dict[str, tuple[str, ...]]:
    """Each name's token (as `analyzer` reads it) -> the languages it names."""
    out: dict[str, list[str]] = {}
    for language, words in NAMES.items():
        for token in analyzer.tokens(words):
            if not token.isalpha():
                continue  # a compound or a number the analyzer adds
            if language not in out.setdefault(token, []):
                out[token].append(language)
    return {token: tuple(languages) for token, languages in out.items()}


def named(words: Iterable[str], names: Mapping[str, tuple[str, ...]],
          files: Mapping[str, int]) -> dict[str, int]:
    """The words of `words` that name a language of the project's `files` (language -> how
    many files) -> how many files are in the languages each names."""
    out = {}
    for word in words:
        count = sum(files.get(language, 0) for language in names.get(word, ()))
        if count:
            out[word] = count
    return out
