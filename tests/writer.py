"""A writer process for the concurrency and crash-safety tests (run as a script).

    python tests/writer.py concurrent PROJECT WORKER COUNT
    python tests/writer.py crash PROJECT SEED

Each operation opens the project as a fresh process-level App would, so the tests exercise the
same path as many agents and CLI calls writing one vault at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from loremap.app import App
from loremap.memory.service import Draft


def concurrent(project: Path, worker: int, count: int) -> None:
    for i in range(count):
        app = App.open(project)
        try:
            title = "Shared title" if i % 2 else f"Worker {worker} note {i}"
            app.memory.remember(Draft(type="gotcha", title=title, body=f"w{worker} i{i} body"))
        finally:
            app.close()


def crash(project: Path, seed: int) -> None:
    """Supersede, archive and add large notes in a loop, announcing each finished step."""
    app = App.open(project)
    filler = "lorem ipsum dolor sit amet " * 4000  # ~100 KB: a write takes a while
    previous: str | None = None
    for step in range(10_000):
        tag = f"{seed}-{step}"
        body = f"payload {tag}\n{filler}\nend {tag}"
        if step % 3 == 2 and previous is not None:
            app.memory.forget(previous, reason=f"step {tag}")
            previous = None
        else:
            out = app.memory.remember(Draft(type="decision", title=f"Decision {tag}", body=body,
                                            supersedes=previous))
            previous = out.ids[0]
        print(f"done {tag}", flush=True)


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    if mode == "concurrent":
        concurrent(root, int(sys.argv[3]), int(sys.argv[4]))
    else:
        crash(root, int(sys.argv[3]))
