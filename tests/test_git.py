"""Git plumbing (`loremap.git`) against real repositories built in tmp_path, each answer checked
against what git itself says."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from loremap import git as plumbing
from loremap.errors import UserError


def commit(root: Path, name: str, text: str, message: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)


def test_head_commit_reads_git_directly_and_matches_git(repo):
    expected = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert plumbing.head_commit(repo) == expected
    git(repo, "pack-refs", "--all")
    assert plumbing.head_commit(repo) == expected
    git(repo, "checkout", "-q", "--detach")
    assert plumbing.head_commit(repo) == expected


def test_head_commit_is_none_before_the_first_commit_and_outside_git(tmp_path):
    git(tmp_path, "init", "-q", "fresh")
    assert plumbing.head_commit(tmp_path / "fresh") is None
    (tmp_path / "plain").mkdir()
    assert plumbing.head_commit(tmp_path / "plain") is None


def test_a_worktree_reads_its_own_head_and_the_shared_origin(repo, tmp_path):
    git(repo, "remote", "add", "origin", "git@github.com:acme/shop.git")
    git(repo, "branch", "side")
    other = tmp_path / "side"
    git(repo, "worktree", "add", "-q", str(other), "side")
    commit(other, "side.txt", "side\n", "on the side branch")
    assert plumbing.git_root(other / "src") == other
    assert plumbing.head_commit(other) == git(other, "rev-parse", "--short=7", "HEAD").strip()
    assert plumbing.head_commit(other) != plumbing.head_commit(repo)
    assert plumbing.origin_key(other) == "github.com/acme/shop"


@pytest.mark.parametrize("url", [
    "https://github.com/acme/shop.git", "https://user@GitHub.com/acme/shop",
    "ssh://git@github.com:22/acme/shop.git", "git@github.com:acme/shop.git",
    "git@github.com:acme/shop/",
])
def test_every_url_form_of_one_origin_gives_one_key(repo, url):
    git(repo, "remote", "add", "origin", url)
    assert plumbing.origin_key(repo) == "github.com/acme/shop"


def test_no_origin_no_key(repo, tmp_path):
    assert plumbing.origin_key(repo) is None
    git(repo, "remote", "add", "upstream", "https://github.com/acme/shop.git")
    assert plumbing.origin_key(repo) is None
    assert plumbing.origin_key(tmp_path) is None


def test_the_blob_hash_is_the_one_git_computes(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"line\r\n\x00binary\xff")
    assert plumbing.blob_hash(path) == git(tmp_path, "hash-object", str(path)).strip()
    assert plumbing.blob_hash(tmp_path / "missing") is None


def test_commits_since_counts_the_commits_that_touched_the_file(repo):
    start = git(repo, "rev-parse", "HEAD").strip()
    commit(repo, "src/a.py", "one\n", "first a")
    commit(repo, "README.md", "# other\n", "not a")
    commit(repo, "src/a.py", "two\n", "second a")
    assert plumbing.commits_since(repo, start, "src/a.py") == 2
    assert plumbing.commits_since(repo, start, "README.md") == 1
    assert plumbing.commits_since(repo, "0" * 40, "src/a.py") is None


def test_a_plain_folder_is_no_work_tree_and_has_no_history(tmp_path):
    assert not plumbing.in_work_tree(tmp_path)
    assert plumbing.is_shallow(tmp_path) is None
    assert plumbing.git_root(tmp_path) is None
    assert plumbing.commits_since(tmp_path, "HEAD~1", "x") is None


def test_a_repository_says_whether_it_is_shallow(repo, tmp_path):
    assert plumbing.in_work_tree(repo / "src")
    assert plumbing.is_shallow(repo) is False
    commit(repo, "b.txt", "b\n", "second")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", repo.as_uri(), str(clone))
    assert plumbing.is_shallow(clone) is True
    git(tmp_path, "init", "-q", "empty")
    assert plumbing.is_shallow(tmp_path / "empty") is None


def test_ls_files_lists_tracked_and_unignored_files_in_order(repo):
    (repo / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (repo / "a_new.txt").write_text("new\n", encoding="utf-8")
    (repo / "debug.log").write_text("noise\n", encoding="utf-8")
    listed = list(plumbing.ls_files(repo))
    assert listed == sorted(listed)
    assert {".gitignore", "a_new.txt", "README.md", "src/auth/login.ts"} <= set(listed)
    assert "debug.log" not in listed


def test_a_failing_git_command_is_one_line_naming_it(repo):
    with pytest.raises(UserError, match=r"^git log failed in .*: fatal: "):
        list(plumbing.git_stream(repo, ["log", "--no-such-option"]))
