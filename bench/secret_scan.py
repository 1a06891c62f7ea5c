"""Secret scan cost per note, with and without the vendored gitleaks rules.

    python bench/secret_scan.py [--notes 300] [--repeat 5]

The scan runs on every write and on every note file reconcile or reindex reads (hand-written
notes are quarantined at index time), so its cost is paid per note. Notes are cut from this
repository's own docs (prose about tokens, keys and passwords: the keyword prefilter's worst
case) plus a few with a credential. Prints the median per note for loremap's own rules alone,
for both rule sets, the ratio, and the one-time cost of loading the rules in a fresh process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from loremap.vault import gitleaks, secrets

ROOT = Path(__file__).resolve().parent.parent


def corpus(count: int) -> list[str]:
    """`count` notes of about 1.5 KB from the docs, one in ten with a credential in it."""
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(docs)
    notes = []
    for i in range(count):
        start = (i * 1499) % max(1, len(text) - 1500)
        note = text[start : start + 1500]
        if i % 10 == 0:
            note += "\nexport GITHUB_TOKEN=ghp_" + "a1B2c3D4e5F6" * 3 + "\n"
        notes.append(note)
    return notes


def per_note_ms(notes: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for note in notes:
            secrets.scan(note)
        runs.append((time.perf_counter() - start) / len(notes) * 1000)
    return statistics.median(runs)


def load_ms() -> float:
    code = ("import time; t = time.perf_counter(); from loremap.vault import gitleaks; "
            "gitleaks.rule_set(); print((time.perf_counter() - t) * 1000)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(5)]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    notes = corpus(args.notes)
    secrets.scan("warm up")  # rules loaded and compiled outside the timing
    for note in notes:
        secrets.scan(note)
    both = per_note_ms(notes, args.repeat)
    real = gitleaks.scan
    gitleaks.scan = lambda text, lowered=None: []
    try:
        own = per_note_ms(notes, args.repeat)
    finally:
        gitleaks.scan = real
    print(f"{args.notes} notes of ~1.5 KB, median of {args.repeat} runs")
    print(f"  loremap's rules alone:     {own:.3f} ms per note")
    print(f"  with the gitleaks rules:   {both:.3f} ms per note ({both / own:.1f}x)")
    print(f"  loading the gitleaks rules once per process: {load_ms():.1f} ms")


if __name__ == "__main__":
    main()
