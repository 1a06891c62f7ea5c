"""Which files the code map reads: real git repositories and plain folders built in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from conftest import git
from loremap.codemap.discover import (
    DEFAULT_EXCLUDE,
    Skipped,
    SkipRules,
    SourceFile,
    discover,
    sniff,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make(tmp_path: Path, files: dict[str, str | bytes], in_git: bool) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    write(root, files)
    if in_git:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "initial")
    return root


def found(root: Path, rules: SkipRules | None = None) -> dict[str, str | None]:
    """path -> language for SourceFiles, path -> "skipped: reason" for Skipped."""
    result: dict[str, str | None] = {}
    for item in discover(root, rules or SkipRules()):
        if isinstance(item, Skipped):
            result[item.path] = f"skipped: {item.reason}"
        else:
            result[item.path] = item.language
    return result


both_modes = pytest.mark.parametrize("in_git", [True, False], ids=["git", "folder"])


# ---- git work trees ----

def test_tracked_and_untracked_files_are_listed_in_path_order_and_ignored_ones_are_not(
        tmp_path: Path) -> None:
    root = make(tmp_path, {"b/x.py": "x = 1\n", "a.py": "a = 1\n", ".gitignore": "secret.py\n"},
                in_git=True)
    write(root, {"z.py": "z = 1\n", "a-b.go": "package a\n", "secret.py": "s = 1\n"})

    items = list(discover(root, SkipRules()))

    assert [item.path for item in items] == ["a-b.go", "a.py", "b/x.py", "z.py"]
    first = items[1]
    assert isinstance(first, SourceFile)
    st = (root / "a.py").stat()
    assert (first.language, first.size, first.mtime_ns) == ("python", st.st_size, st.st_mtime_ns)


def test_a_tracked_file_deleted_from_the_work_tree_is_dropped_silently(tmp_path: Path) -> None:
    root = make(tmp_path, {"keep.py": "", "gone.py": ""}, in_git=True)
    (root / "gone.py").unlink()

    assert found(root) == {"keep.py": "python"}


def test_submodules_and_nested_repositories_are_not_entered(tmp_path: Path) -> None:
    inner = make(tmp_path, {"lib.py": ""}, in_git=True)
    root = tmp_path / "outer"
    write(root, {"main.py": ""})
    git(root, "init", "-q")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(root, "commit", "-qm", "with a submodule")
    git(inner, "clone", "-q", str(inner), str(root / "nested"))

    assert found(root) == {"main.py": "python"}


def test_non_utf8_file_names_are_listed_and_can_be_opened(tmp_path: Path) -> None:
    root = make(tmp_path, {"z.py": ""}, in_git=True)
    try:
        (root / os.fsdecode(b"caf\xe9.py")).write_text("x = 1\n", encoding="utf-8")
    except (OSError, UnicodeError):
        pytest.skip("this file system wants UTF-8 names")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "latin-1 name")
    (root / "z.py").unlink()

    [item] = discover(root, SkipRules())

    assert isinstance(item, SourceFile)
    assert (root / item.path).read_text(encoding="utf-8") == "x = 1\n"


def test_a_consumer_that_stops_early_leaves_no_git_process_behind(tmp_path: Path) -> None:
    root = make(tmp_path, {f"m{i:03}.py": "" for i in range(300)}, in_git=True)

    stream = discover(root, SkipRules())
    assert isinstance(stream, Generator)
    assert next(stream).path == "m000.py"
    stream.close()  # kills both `git ls-files`; filterwarnings=error catches a leaked Popen


# ---- plain folders ----

def test_a_folder_outside_git_honours_nested_gitignore_files_with_negation(
        tmp_path: Path) -> None:
    root = make(tmp_path, {
        ".gitignore": "*.gen.py\nlogs/\n",
        "app.py": "", "app.gen.py": "", "logs/x.py": "",
        "pkg/.gitignore": "!keep.gen.py\n/local.py\n",
        "pkg/keep.gen.py": "", "pkg/drop.gen.py": "", "pkg/local.py": "", "pkg/sub/local.py": "",
        ".git/hooks/pre-commit.sh": "",
    }, in_git=False)

    assert found(root) == {"app.py": "python", "pkg/keep.gen.py": "python",
                           "pkg/sub/local.py": "python"}


def test_a_symlink_loop_outside_git_terminates_and_links_leaving_the_root_are_skipped(
        tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n", encoding="utf-8")
    root = make(tmp_path, {"a/real.py": "r = 1\n"}, in_git=False)
    (root / "a" / "loop").symlink_to(root / "a", target_is_directory=True)
    (root / "up").symlink_to("..", target_is_directory=True)
    (root / "alias.py").symlink_to("a/real.py")
    (root / "escape.py").symlink_to(outside)
    (root / "dangling.py").symlink_to("nowhere.py")
    (root / "ping.py").symlink_to("pong.py")
    (root / "pong.py").symlink_to("ping.py")

    assert found(root) == {
        "a/real.py": "python", "alias.py": "python", "dangling.py": "skipped: symlink",
        "escape.py": "skipped: symlink", "ping.py": "skipped: symlink",
        "pong.py": "skipped: symlink",
    }


def test_a_folder_walk_lists_paths_in_the_same_order_as_git(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {name: "" for name in
                                     ("a.py", "a-b/x.py", "a/b.py", "a/b/c.py", "a.b/y.py", "B.py")}
    walked = [i.path for i in discover(make(tmp_path / "w", files, in_git=False), SkipRules())]
    listed = [i.path for i in discover(make(tmp_path / "g", files, in_git=True), SkipRules())]

    assert walked == listed == sorted(walked)


# ---- both ----

@both_modes
def test_only_source_and_config_files_are_yielded(tmp_path: Path, in_git: bool) -> None:
    root = make(tmp_path, {
        "logo.png": b"\x89PNG", "notes.txt": "", "data.json": "{}",
        "package.json": "{}", "tsconfig.base.json": "{}", "web/README.md": "# web",
        "go.mod": "module x\n", "main.go": "package main\n",
    }, in_git)

    assert found(root) == {"go.mod": None, "main.go": "go", "package.json": None,
                           "tsconfig.base.json": None, "web/README.md": None}


@both_modes
def test_a_file_over_the_size_limit_is_skipped_with_the_limit_as_reason(
        tmp_path: Path, in_git: bool) -> None:
    root = make(tmp_path, {"big.py": "x" * 2001, "small.py": "x" * 2000}, in_git)

    assert found(root, SkipRules(max_bytes=2000)) == {"big.py": "skipped: over 2 KB",
                                                      "small.py": "python"}
    assert found(root, SkipRules(max_bytes=1)) == {"big.py": "skipped: over 1 bytes",
                                                   "small.py": "skipped: over 1 bytes"}
    assert SkipRules().max_bytes == 1_000_000


@both_modes
def test_vendored_and_build_directories_are_reported_once_and_not_entered(
        tmp_path: Path, in_git: bool) -> None:
    root = make(tmp_path, {
        "node_modules/react/index.js": "", "node_modules/react/package.json": "{}",
        "web/node_modules/x/y.js": "", "dist/app.js": "", "src/app.ts": "",
        "third_party/lib/a.c": "", "src/__pycache__/m.cpython-311.pyc": b"\0",
    }, in_git)

    assert found(root) == {
        "dist/": "skipped: generated", "node_modules/": "skipped: vendored",
        "src/__pycache__/": "skipped: excluded", "src/app.ts": "typescript",
        "third_party/": "skipped: vendored", "web/node_modules/": "skipped: vendored",
    }


@both_modes
def test_generated_and_minified_file_names_are_skipped(tmp_path: Path, in_git: bool) -> None:
    root = make(tmp_path, {"api/user.pb.go": "", "api/user_pb2.py": "", "app.min.js": "",
                           "api/user.go": "", "Form.Designer.cs": "", "yarn.lock": ""}, in_git)

    assert found(root) == {"Form.Designer.cs": "skipped: generated", "api/user.go": "go",
                           "api/user.pb.go": "skipped: generated",
                           "api/user_pb2.py": "skipped: generated",
                           "app.min.js": "skipped: minified"}


@both_modes
def test_user_patterns_exclude_with_their_own_reason_and_can_re_include(
        tmp_path: Path, in_git: bool) -> None:
    root = make(tmp_path, {"docs/gen/a.py": "", "docs/b.py": "", "build/keep.py": "",
                           "scripts/x_test.py": "", "x_test.py": ""}, in_git)
    rules = SkipRules(exclude=(*DEFAULT_EXCLUDE, "/docs/gen/", "scripts/**/*_test.py", "!build/"))

    assert found(root, rules) == {"build/keep.py": "python", "docs/b.py": "python",
                                  "docs/gen/": "skipped: excluded",
                                  "scripts/x_test.py": "skipped: excluded",
                                  "x_test.py": "python"}


# ---- content ----

def test_a_nul_byte_in_the_first_8_kb_means_binary() -> None:
    assert sniff("icon.py", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR") == "binary"
    assert sniff("late.py", b"x = 1\n" * 2000 + b"\0") is None


def test_a_minified_bundle_is_recognised_but_code_with_one_long_line_is_not() -> None:
    bundle = b"/*! lib v1 | MIT */\n" + b"var a=function(b){return b+1};" * 300
    assert sniff("static/app.js", bundle) == "minified"
    assert sniff("static/app.css", b".a{color:red}" * 200) == "minified"
    ordinary = b"export const x = 1;\n" * 200 + b"const icon = 'data:image/png;base64," \
        + b"A" * 3000 + b"';\n"
    assert sniff("src/icon.js", ordinary) is None
    assert sniff("src/table.py", b"T = [" + b"1, " * 2000 + b"]\n") is None  # not a bundle type


@pytest.mark.parametrize("header", [
    b"// Code generated by protoc-gen-go. DO NOT EDIT.\n",
    b"# @generated by buck\n",
    b"//------\n// <auto-generated>\n//     This code was generated by a tool.\n",
    b"/* This file is automatically generated by bindgen */\n",
    b"# Autogenerated by Thrift Compiler (0.9.3)\n",
    b"# Generated by the protocol buffer compiler.  DO NOT EDIT!\n",
    b"// DO NOT EDIT: this file is generated from schema.graphql\n",
])
def test_generated_markers_at_the_top_mean_generated(header: bytes) -> None:
    assert sniff("x.ts", header + b"export const a = 1;\n") == "generated"


def test_ordinary_source_is_not_flagged_including_loremaps_own() -> None:
    assert sniff("a.py", b'"""Generate reports; do not edit by hand later."""\n') is None
    assert sniff("a.py", b"x = 1\n" * 300 + b"# @generated\n") is None  # past the first 1 KB
    for path in [*SRC.rglob("*.py"), Path(__file__)]:
        assert sniff(path.name, path.read_bytes()[:8192]) is None, path
