"""What git history yields for the code map: co-change weights and commit subjects, on real
repositories built commit by commit in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from loremap.codemap.history import read_history


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


def commit(root: Path, subject: str, *paths: str) -> None:
    """Append a line to each path (creating it) and commit them."""
    for name in paths:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as file:
            file.write(f"{subject}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", subject)


def test_a_folder_that_is_not_a_repository_has_no_history(tmp_path: Path) -> None:
    assert read_history(tmp_path) is None


def test_a_repository_without_commits_has_no_history(root: Path) -> None:
    assert read_history(root) is None


def test_cochange_is_commits_touching_both_over_the_rarer_ones_commits_plus_one(
        root: Path) -> None:
    commit(root, "one", "a.py", "b.py")
    commit(root, "two", "a.py", "b.py")
    commit(root, "three", "a.py", "b.py", "c.py")
    commit(root, "four", "a.py", "c.py")
    commit(root, "five", "a.py")  # a: 5 commits, b: 3, c: 2; (b, c) together only once

    history = read_history(root)

    assert history is not None
    assert (history.commits, history.shallow) == (5, False)
    assert history.cochange == {("a.py", "b.py"): 3 / 4, ("a.py", "c.py"): 2 / 3}


def test_commits_touching_more_than_max_files_are_ignored(root: Path) -> None:
    commit(root, "sweep", "a.py", "b.py", "c.py", "d.py")
    commit(root, "sweep again", "a.py", "b.py", "c.py", "d.py")
    commit(root, "pair", "a.py", "b.py")
    commit(root, "pair again", "a.py", "b.py")

    history = read_history(root, max_files=3)

    assert history is not None
    assert history.commits == 4
    assert history.cochange == {("a.py", "b.py"): 2 / 3}
    assert "c.py" not in history.subjects
    wider = read_history(root, max_files=4)
    assert wider is not None
    assert wider.cochange[("c.py", "d.py")] == 2 / 3


def test_subjects_are_the_latest_few_newest_first(root: Path) -> None:
    for subject in ("first", "second", "third", "fourth"):
        commit(root, subject, "a.py")
    commit(root, "only b", "b.py")

    history = read_history(root, subjects_per_file=3)

    assert history is not None
    assert history.subjects == {"a.py": ("fourth", "third", "second"), "b.py": ("only b",)}


def test_max_commits_bounds_how_far_back_history_is_read(root: Path) -> None:
    for subject in ("old", "older pair", "new", "newer"):
        commit(root, subject, "a.py", "b.py")

    history = read_history(root, max_commits=2)

    assert history is not None
    assert history.commits == 2
    assert history.subjects["a.py"] == ("newer", "new")
    assert history.cochange == {("a.py", "b.py"): 2 / 3}


def test_a_renamed_file_keeps_its_history_under_its_current_name(root: Path) -> None:
    commit(root, "add", "old/name.py", "b.py")
    commit(root, "change", "old/name.py", "b.py")
    (root / "new").mkdir()
    git(root, "mv", "old/name.py", "new/name.py")
    git(root, "commit", "-qm", "move")
    commit(root, "a new file under the old name", "old/name.py")

    history = read_history(root)

    assert history is not None
    assert history.cochange == {("b.py", "new/name.py"): 2 / 3}
    assert history.subjects["new/name.py"] == ("move", "change", "add")
    assert history.subjects["old/name.py"] == ("a new file under the old name",)


def test_merge_commits_are_not_counted(root: Path) -> None:
    commit(root, "base", "a.py")
    git(root, "checkout", "-qb", "side")
    commit(root, "side work", "b.py")
    git(root, "checkout", "-q", "main")
    commit(root, "main work", "c.py")
    git(root, "merge", "-q", "--no-edit", "side")

    history = read_history(root)

    assert history is not None
    assert history.commits == 3


def test_a_shallow_clone_says_so(root: Path, tmp_path: Path) -> None:
    commit(root, "one", "a.py")
    commit(root, "two", "a.py")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", root.as_uri(), str(clone))

    history = read_history(clone)

    assert history is not None
    assert (history.commits, history.shallow) == (1, True)
