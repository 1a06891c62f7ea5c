"""Which command an agent's configuration names to start loremap's programs.

A file in the user's home folder serves this machine only, so it names a program by its
absolute path (the console script beside the Python that runs loremap, else the one on PATH):
it keeps working whatever the agent's PATH. A file in the project is committed, and read in
other clones and on other machines, so it never holds a path of this machine. It names the
program by its path inside the project when loremap runs from a virtual environment there
(`.venv/bin/loremap`, spelled the way the agent names the project folder, `${workspaceFolder}/`
for VS Code), else by its bare name, which the agent looks up on PATH; `missing` says which bare
names PATH lacks, so connect can say so instead of writing something that cannot start.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path


def beside(name: str) -> Path | None:
    """Our console script `name` beside this Python (a venv or pipx install), if it is there."""
    path = Path(sys.executable).absolute().parent / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def user_program(name: str) -> str:
    """The absolute path of `name` for a file in the home folder: beside this Python, else from
    PATH; the bare name when it is in neither (`missing` then reports it)."""
    found = beside(name)
    return str(found) if found is not None else (shutil.which(name) or name)


def in_project(name: str, root: Path) -> str | None:
    """The path of our `name` relative to the project `root` (with `/`), when loremap runs from
    a folder inside the project; None otherwise."""
    found = beside(name)
    if found is None:
        return None
    real = Path(os.path.realpath(found.parent)) / name  # the folder, not the script's link
    return real.relative_to(root).as_posix() if real.is_relative_to(root) else None


def project_program(name: str, root: Path, prefix: str | None) -> str:
    """What a project file names: `prefix` + the path inside the project, when loremap runs from
    there and the agent has a way to name the project folder (`prefix` is not None: "" for an
    agent that starts the program in the project folder); else the bare name."""
    inside = in_project(name, root)
    return name if inside is None or prefix is None else prefix + inside


def missing(commands: Iterable[str]) -> list[str]:
    """The bare names among `commands` that PATH does not hold, each once."""
    return [c for c in dict.fromkeys(commands) if "/" not in c and shutil.which(c) is None]


def missing_line(names: list[str], who: str) -> str:
    """One line saying that `who` cannot start `names`, and how to fix it."""
    shown = " and ".join(f"`{name}`" for name in names)
    verb = "is" if len(names) == 1 else "are"
    here = beside(names[0])
    fix = (f"put {here.parent} on PATH, or install loremap where every program finds it"
           if here is not None else "install loremap where every program finds it")
    them = "it" if len(names) == 1 else "them"
    return (f"{shown} {verb} not on PATH, so {who} cannot start {them}: {fix} "
            "(`pipx install ./loremap` from a clone)")
