"""Portuguese singular/plural pairs that share a token: Snowball alone against the analyzer.

    python bench/plurals.py [--words /usr/share/dict/brazilian]

The word list is Debian's `wbrazilian` package (`apt-get install wbrazilian`): 275,502
inflected Brazilian Portuguese words. A pair is a word of the list and the plural Portuguese
grammar forms from it (-ão -> -ões/-ães/-ãos, -al -> -ais, -el -> -éis/-eis, -il -> -is/-eis,
-ol -> -óis, -ul -> -uis, -m -> -ns, -r/-z/-s -> +es, a vowel -> +s), kept when the plural is in
the list too. Printed per singular ending: the pairs whose folded forms Snowball stems alike,
and those that share a token of `Analyzer(["pt"])` (the plural step of `text/plurals.py`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import Stemmer  # type: ignore[import-not-found]

from loremap.text import Analyzer
from loremap.text.analyzer import fold

_PLURALS = (("ão", ("ões", "ães", "ãos")), ("al", ("ais",)), ("el", ("éis", "eis")),
            ("il", ("is", "eis")), ("ol", ("óis",)), ("ul", ("uis",)), ("m", ("ns",)),
            ("r", ("res",)), ("z", ("zes",)), ("s", ("ses",)))  # fmt: skip


def pairs(words: set[str]) -> list[tuple[str, str, str]]:
    """(ending, singular, plural) for every plural of a listed word that is listed too."""
    found = []
    for word in sorted(words):
        for ending, plurals in _PLURALS:
            if word.endswith(ending):
                stem = word[: len(word) - len(ending)] if ending not in "rzs" else word
                forms = [stem + p for p in plurals] if ending not in "rzs" else [word + "es"]
                break
        else:
            ending, forms = "vowel", [word + "s"] if word[-1] in "aeiouáéíóúâêôã" else []
        found += [(ending, word, plural) for plural in forms if plural in words]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=Path, default=Path("/usr/share/dict/brazilian"))
    args = parser.parse_args()
    if not args.words.is_file():
        sys.exit(f"bench/plurals.py: skipped ({args.words} not found: apt-get install wbrazilian)")
    lines = args.words.read_text(encoding="utf-8").split()
    words = {w for w in lines if w.islower()}
    stem = Stemmer.Stemmer("portuguese").stemWord
    analyzer = Analyzer(["pt"])
    total: Counter[str] = Counter()
    snowball: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    for ending, singular, plural in pairs(words):
        total[ending] += 1
        snowball[ending] += stem(fold(singular)) == stem(fold(plural))
        ours[ending] += bool(set(analyzer.tokens(singular)) & set(analyzer.tokens(plural)))
    print(f"bench/plurals.py: {len(words):,} words of {args.words}, {total.total():,} pairs")
    print(f"{'singular':10} {'pairs':>7} {'snowball':>9} {'analyzer':>9}")
    for ending, n in total.most_common():
        print(f"-{ending:9} {n:7,} {snowball[ending]:9,} {ours[ending]:9,}")
    print(f"{'all':10} {total.total():7,} {snowball.total():9,} {ours.total():9,}  "
          f"({snowball.total() / total.total():.1%} -> {ours.total() / total.total():.2%})")


if __name__ == "__main__":
    main()
