"""What doctor's secret scan adds to `loremap doctor` on a project of N notes.

    python bench/doctor_secrets.py [--notes 2000] [--repeat 3]

doctor scans every note file of both vaults for a credential (a hand edit or a `git pull`
gets past the write-time scan), not only the notes the index already quarantined. The notes
are ~1.5 KB each, cut from this repository's docs (prose about tokens and keys: the keyword
prefilter's worst case), written as files and indexed with `reindex`. Prints, from the same
run, the median time of the whole `diagnose` and of the secret check alone, and its share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loremap.app import App, init_project  # noqa: E402
from loremap.memory import doctor  # noqa: E402
from loremap.store.sqlite import fts5_available  # noqa: E402
from secret_scan import corpus  # noqa: E402


def project(root: Path, count: int) -> None:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    app, _ = init_project(root, dict(os.environ))
    app.close()
    notes = root / ".loremap" / "notes"
    for n, text in enumerate(corpus(count)):
        body = text.split("\nexport GITHUB_TOKEN=")[0]  # a clean vault, the usual case
        note_id = f"concept-bench-note-{n}"
        (notes / f"{note_id}.md").write_text(
            f"---\nid: {note_id}\ntype: concept\ntitle: Bench note {n}\n---\n{body}\n",
            encoding="utf-8")
    with App.open(root, require_project=True, fresh_index=True) as app:
        app.memory.rebuild()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loremap-bench-doctor-") as tmp:
        os.environ.update(LOREMAP_HOME=str(Path(tmp) / "home"), LOREMAP_DAEMON="off")
        root = Path(tmp) / "repo"
        project(root, args.notes)
        whole, secrets = [], []
        with App.open(root) as app:
            for _ in range(args.repeat):
                start = time.perf_counter()
                found = doctor.diagnose(app.memory, app.loremap_dir, fts5_available())
                whole.append(time.perf_counter() - start)
                start = time.perf_counter()
                doctor._check_secrets(app.memory, doctor._Reads())
                secrets.append(time.perf_counter() - start)
        errors = [f.message for f in found if f.level == "error"]
        assert not errors, f"{len(errors)} errors, the first: {errors[0]}"
    w, s = statistics.median(whole), statistics.median(secrets)
    print(f"doctor on {args.notes} notes of ~1.5 KB (median of {args.repeat}): diagnose "
          f"{w:.2f} s, of which the secret scan of every note file {s:.2f} s ({s / w:.0%}; "
          f"{s / args.notes * 1000:.2f} ms a note)")


if __name__ == "__main__":
    main()
