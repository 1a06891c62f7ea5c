"""A writer process for the concurrency and crash-safety tests (run as a script).

    python tests/writer.py concurrent PROJECT WORKER COUNT
    python tests/writer.py crash PROJECT SEED
    python tests/writer.py batch PROJECT SEED
    python tests/writer.py batch-kill PROJECT RENAMES [SUPERSEDES]

Each operation opens the project as a fresh process-level App would, so the tests exercise the
same path as many agents and CLI calls writing one vault at once.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from loremap.app import App
from loremap.memory.drafts import Draft
from loremap.use.fresh import SERVER
from loremap.use.notes import remember


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


def batch_drafts(tag: str, count: int = 2, supersedes: str | None = None) -> list[Draft]:
    """The facts of one batch, as an MCP `remember` sends them: `Batch <tag> fact <k>`."""
    filler = "lorem ipsum dolor sit amet " * 2000  # ~50 KB each: writing them takes a while
    return [Draft(type="gotcha", title=f"Batch {tag} fact {k}",
                  body=f"payload {tag}\n{filler}\nend {tag}",
                  supersedes=supersedes if k == 0 else None) for k in range(count)]


def batch(project: Path, seed: int) -> None:
    """Two-fact writes through the use case the MCP tool calls, announcing each one done."""
    app = App.open(project)
    for step in range(10_000):
        remember(app, batch_drafts(f"{seed}-{step}"), SERVER)
        print(f"done {seed}-{step}", flush=True)


def batch_kill(project: Path, renames: int, supersedes: str | None) -> None:
    """One three-fact write (the first superseding `supersedes`, if given) that SIGKILLs its
    own process right after its `renames`-th note file is renamed into place."""
    real_replace = os.replace
    done = []

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        real_replace(src, dst)
        if str(dst).endswith(".md"):
            done.append(dst)
            if len(done) == renames:
                os.kill(os.getpid(), signal.SIGKILL)

    app = App.open(project)
    os.replace = replace  # type: ignore[assignment]
    remember(app, batch_drafts("k", 3, supersedes), SERVER)


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    if mode == "concurrent":
        concurrent(root, int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "batch":
        batch(root, int(sys.argv[3]))
    elif mode == "batch-kill":
        batch_kill(root, int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        crash(root, int(sys.argv[3]))
