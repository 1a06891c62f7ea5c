"""The analyzer's throughput and the index's size with one language and with several.

    python bench/analyzer.py [--languages en en,pt pt,en] [--repeat 5] [--copies 4]

The text is English: this repository's docs and sources (prose and code, about a megabyte),
`--copies` times. For each language set it prints, from the same run:

- cold: a new Analyzer tokenising the whole text once (each distinct word is analysed once,
  then served from the memo, as in a `loremap reindex`), median of `--repeat` runs;
- warm: the same Analyzer again (every word a memo hit: the hook's and a server's steady state);
- tokens: how many tokens the text gives (what BM25 counts as its length);
- index: the SQLite index of the docs cut into notes of about 1.5 KB, in bytes.

The first language set is the baseline each ratio is taken against.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loremap.model import Note
from loremap.model.note import NoteType
from loremap.store.sqlite import SqliteStore
from loremap.text import Analyzer

ROOT = Path(__file__).resolve().parent.parent


def english_text() -> str:
    files = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
    return "\n".join(path.read_text(encoding="utf-8") for path in files)


def seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def index_bytes(languages: list[str], text: str, folder: Path) -> int:
    """The size of an index of `text` cut into notes, built with `languages`."""
    path = folder / f"{'-'.join(languages)}.sqlite"
    store = SqliteStore(path, Analyzer(languages))
    with store.write():
        for n, start in enumerate(range(0, len(text), 1500)):
            body = text[start : start + 1500]
            note = Note(id=f"concept-part-{n}", type=NoteType.CONCEPT,
                        title=body.strip().splitlines()[0][:80] if body.strip() else "part",
                        body=body)
            store.upsert_note(note, "project", f"notes/{note.id}.md", "", 0, len(body))
    store.conn.execute("VACUUM")
    store.close()
    return sum(p.stat().st_size for p in folder.glob(path.name + "*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", nargs="+", default=["en", "en,pt", "pt,en"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    one = english_text()
    text = "\n".join([one] * args.copies)
    words = len(text.split())
    print(f"bench/analyzer.py: {len(text) / 1e6:.1f} MB of English ({words:,} words: docs and "
          f"sources x{args.copies}), median of {args.repeat}")
    print(f"{'languages':12} {'cold words/s':>13} {'warm words/s':>13} {'tokens':>11} "
          f"{'index bytes':>12}   vs the first")
    specs = [spec.split(",") for spec in args.languages]
    analyzers = [Analyzer(languages) for languages in specs]
    tokens = [len(analyzer.tokens(text)) for analyzer in analyzers]  # fills each memo
    cold: list[list[float]] = [[] for _ in specs]
    warm: list[list[float]] = [[] for _ in specs]
    for _ in range(args.repeat):  # interleaved, so a busy machine slows every set alike
        for i, (languages, analyzer) in enumerate(zip(specs, analyzers, strict=True)):
            cold[i].append(seconds(lambda: Analyzer(languages).tokens(text)))  # noqa: B023
            warm[i].append(seconds(lambda: analyzer.tokens(text)))  # noqa: B023
    first: tuple[float, float, int, int] | None = None
    with tempfile.TemporaryDirectory(prefix="loremap-bench-analyzer-") as tmp:
        for i, spec in enumerate(args.languages):
            size = index_bytes(specs[i], one, Path(tmp))
            figures = (words / statistics.median(cold[i]), words / statistics.median(warm[i]),
                       tokens[i], size)
            first = first or figures
            ratios = " ".join(f"{a / b:.2f}x" for a, b in zip(figures, first, strict=True))
            print(f"{spec:12} {figures[0]:13,.0f} {figures[1]:13,.0f} {tokens[i]:11,} "
                  f"{size:12,}   {ratios}")

if __name__ == "__main__":
    main()
