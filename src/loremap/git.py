"""Git plumbing: what the repository says about itself, read from `.git` or asked of `git`.

Project discovery (the work tree's top), the note's commit (HEAD), the shared database's project
key (the `origin` remote), the code map's file list (`ls-files`) and history (`log`), and a
note's staleness (blob hashes, commits since) all ask git something. They ask it here, so one
module knows the `.git` layouts (a folder, a worktree's `gitdir:` file, `commondir`, packed
refs) and the way git's output is read (NUL-separated, decoded like file names).

It is a leaf below `config` (project discovery needs `git_root`) and on the hook path, so it
imports only the standard library, and `subprocess`, `tempfile`, `re` and `hashlib` inside the
functions that run git or hash: HEAD and `origin` are read from the files, because a `git`
process costs ~5 ms and the commit is read on every write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from loremap.errors import UserError

_QUOTE_OFF = ("-c", "core.quotepath=off")  # paths as bytes, never C-quoted


# --- the repository's files ----------------------------------------------------------------


def git_root(start: Path) -> Path | None:
    """The top of the git work tree containing `start`, or None outside git."""
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _git_dir(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            path = Path(text.removeprefix("gitdir:").strip())
            return path if path.is_absolute() else (root / path).resolve()
    return None


def _common_dir(git_dir: Path) -> Path:
    """Where a worktree's shared refs and config live (its `commondir`), else `git_dir`."""
    commondir = git_dir / "commondir"
    if commondir.is_file():
        return (git_dir / commondir.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def _read_head(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref: "):
        return head or None
    ref = head.removeprefix("ref: ")
    common = _common_dir(git_dir)
    for base in (git_dir, common):
        loose = base / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip() or None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    if (common / "reftable").is_dir():
        raise OSError("reftable")  # refs this reader cannot see: let git answer
    return None  # an unborn branch: no commits yet


def head_commit(root: Path) -> str | None:
    """The abbreviated (7-hex) HEAD commit of the repository at `root`, or None.

    Read from `.git` directly: this runs on every write and a `git` process costs ~5 ms.
    Trigger: a layout this reader does not know (reftable, unusual worktrees).
    Why: better slow than wrong. Outcome: ask `git rev-parse` instead.
    """
    git_dir = _git_dir(root)
    if git_dir is None:
        return None
    try:
        sha = _read_head(git_dir)
        if sha is None:
            return None
        if len(sha) >= 7 and all(c in "0123456789abcdef" for c in sha):
            return sha[:7]
    except OSError:
        pass
    out = _run(root, ["rev-parse", "--short=7", "HEAD"], timeout=5)
    return out or None


def _origin_url(config: str) -> str | None:
    url = None
    section = ""
    for raw in config.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.replace(" ", "").replace('"', "").lower()
        elif section == "[remoteorigin]" and line.replace(" ", "").startswith("url="):
            url = line.split("=", 1)[1].strip()
    return url or None


def _origin_of(repo: Path) -> str | None:
    """The `origin` URL of the repository at `repo`: a work tree, or a bare repository."""
    git_dir = _git_dir(repo)
    if git_dir is None and (repo / "HEAD").is_file():
        git_dir = repo  # a bare repository: the folder is the git directory
    if git_dir is None:
        return None
    try:
        text = (_common_dir(git_dir) / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return _origin_url(text)


def _local_remote(url: str, repo: Path) -> Path | None:
    """The folder a remote URL names on this machine (a path, `file://`), else None: git
    reads `host:path` as ssh only when no '/' comes before the first ':'."""
    if url.startswith("file://"):
        return Path(url.removeprefix("file://"))
    head, colon, _ = url.partition(":")
    if "://" in url or (colon and "/" not in head):
        return None
    path = Path(url).expanduser()
    return path if path.is_absolute() else repo / path


def _follow_origin(root: Path) -> tuple[str | None, Path]:
    """The first `origin` URL along the chain of clones of folders on this machine, and the
    last repository reached (at most 8 hops; a cycle or a vanished folder ends the chain)."""
    here, seen = root, {root.resolve()}
    for _ in range(8):
        url = _origin_of(here)
        folder = None if url is None else _local_remote(url, here)
        if folder is None:
            return url, here
        folder = folder.resolve()
        if folder.name == ".git":  # cloned from `repo/.git`: the repository is `repo`
            folder = folder.parent
        if folder in seen or not folder.is_dir():
            return None, folder
        seen.add(folder)
        here = folder
    return None, here


def origin_key(root: Path) -> str | None:
    """The git remote `origin` as `host/owner/repo` (the same on every clone, whichever URL
    form each uses: https, ssh, scp-like), or None without one.

    A remote that is a folder on this machine (`git clone ~/src/app`) is followed: the key is
    that repository's own origin's, and None when it has none (`origin_folder` then names it),
    so a repository and its local clones agree.
    """
    url = _follow_origin(root)[0]
    if url is None:
        return None
    import re

    match = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)(?::\d+)?[:/](.+?)(?:\.git)?/*$", url)
    if match is None:
        return url
    return f"{match.group(1).lower()}/{match.group(2).lstrip('/')}"


def origin_folder(root: Path) -> Path:
    """The repository on this machine that `root` was cloned from, following clones of
    folders (`root` itself when its origin is elsewhere or absent); a bare `app.git` is named
    `app`, as the work tree it was made from."""
    folder = _follow_origin(root)[1]
    if folder.name.endswith(".git") and len(folder.name) > 4:
        return folder.with_name(folder.name.removesuffix(".git"))
    return folder


def blob_hash(path: Path) -> str | None:
    """The hash git gives the file's content (`git hash-object`), or None if unreadable."""
    import hashlib  # writes only: keeps OpenSSL's start-up off the read path

    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


# --- asking git ----------------------------------------------------------------------------


def _run(root: Path, args: Sequence[str], timeout: float | None = None) -> str | None:
    """The stripped standard output of `git ARGS` in `root`; None when git is missing, fails,
    refuses the repository or runs past `timeout` seconds."""
    import subprocess

    try:
        done = subprocess.run(["git", *_QUOTE_OFF, *args], cwd=root, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, root is not a folder, a timeout
        return None
    if done.returncode != 0:
        return None
    return os.fsdecode(done.stdout).strip()


def in_work_tree(root: Path) -> bool:
    """Whether `root` is inside a git work tree that git agrees to read."""
    # Trigger: no git, not a work tree, or git refuses the repository (dubious ownership).
    # Why: callers have another way (the code map walks the folder with its .gitignore files).
    # Outcome: False.
    return _run(root, ["rev-parse", "--is-inside-work-tree"]) == "true"


def is_shallow(root: Path) -> bool | None:
    """Whether the repository at `root` is a shallow clone; None if there is no repository or
    no commit."""
    out = _run(root, ["rev-parse", "--is-shallow-repository", "HEAD"])
    if out is None:
        return None
    return out.split("\n", 1)[0].strip() == "true"


def commits_since(root: Path, commit: str, path: str) -> int | None:
    """How many commits touched `path` from `commit` to HEAD; None when git cannot say (no git,
    an unknown commit, a timeout)."""
    out = _run(root, ["rev-list", "--count", f"{commit}..HEAD", "--", path], timeout=10)
    return int(out) if out is not None and out.isdigit() else None


def git_stream(root: Path, args: Sequence[str]) -> Iterator[str]:
    """Run `git ARGS` in `root` and yield its NUL-separated output records as they arrive
    (decoded like file names). Raises UserError if git fails; stops git if the caller stops."""
    import subprocess
    import tempfile

    command = ["git", *_QUOTE_OFF, *args]
    with (tempfile.TemporaryFile() as errors,
          subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=errors,
                           stdin=subprocess.DEVNULL) as proc):
        assert proc.stdout is not None
        try:
            rest = b""
            while chunk := proc.stdout.read(1 << 16):
                *records, rest = (rest + chunk).split(b"\0")
                yield from map(os.fsdecode, records)
            if rest:
                yield os.fsdecode(rest)
            if proc.wait():
                errors.seek(0)
                message = errors.read().decode("utf-8", "replace").strip().splitlines()
                raise UserError(f"git {args[0]} failed in {root}: "
                                f"{message[0] if message else f'exit {proc.returncode}'}")
        finally:
            if proc.poll() is None:
                proc.kill()


def ls_files(root: Path) -> Iterator[str]:
    """The paths of the work tree git counts as the project's, sorted: tracked files and the
    untracked ones no ignore rule excludes (an untracked nested repository ends with `/`)."""
    import heapq

    # One `ls-files --cached --others` lists untracked files before tracked ones; two listings,
    # each sorted, merged, keep the output sorted without holding it.
    tracked = git_stream(root, ["ls-files", "-z", "--cached"])
    untracked = git_stream(root, ["ls-files", "-z", "--others", "--exclude-standard"])
    previous = None
    for path in heapq.merge(tracked, untracked):
        if path != previous:  # an unmerged path is listed once per stage
            yield path
        previous = path
