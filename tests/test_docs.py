"""The README and docs stay true: every command, option and setting is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from loremap.cli.parser import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_in_the_readme_table():
    for name in COMMANDS:
        assert f"| `loremap {name}" in README, name


def test_every_long_option_of_every_command_is_documented():
    for name, parser in subparsers().items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in ("--help", "--json"):
                    assert f"`{flag}" in README, f"loremap {name} {flag}"


def test_the_readme_starts_with_the_two_commands_and_ci_runs_the_test_one():
    commands = re.findall(r"```sh\n(.+?)\n```", README)
    assert "loremap init" in commands[0] and "loremap search" in commands[0]
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]'" in ci and "python -m pytest -q" in ci


def test_every_note_key_is_in_the_format_doc():
    from loremap.vault.frontmatter import KNOWN_KEYS

    doc = (ROOT / "docs" / "notes-format.md").read_text(encoding="utf-8")
    for key in KNOWN_KEYS:
        assert f"`{key}`" in doc, key


def test_every_mcp_tool_and_argument_is_in_the_mcp_doc():
    from loremap.mcp.catalogue import catalogue

    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for tool in catalogue("full"):
        assert f"| `{tool.name}`" in doc, tool.name
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{tool.name}`"))
        for argument in tool.schema["properties"]:
            assert f"`{argument}`" in row, f"{tool.name}.{argument}"


def test_the_licence_pyproject_names_is_in_the_repository():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == "MIT" and text.startswith("MIT License\n")
    assert "Copyright (c) 2026 loremap developers" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "plugin").rglob("*.md"))]


OUTSIDE = ("../" + "shared", "/work/" + "shared")  # spelt apart: this file is a test too


def test_no_doc_or_test_points_outside_the_repository():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert not any(place in text for place in OUTSIDE), path
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), (path, target)
    for path in sorted((ROOT / "tests").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not any(place in text for place in OUTSIDE), path


def test_install_lines_name_what_works_before_a_release():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        # `pipx install 'loremap[mcp]'` asks an index that has no loremap yet.
        assert not re.search(r"(pipx|pip|uv tool) install '?loremap\[", text), path
    assert "pipx install ./loremap" in README and "uv tool install ./loremap" in README
    assert "git+<this repository's git URL>" in README


def test_the_mcp_sdk_is_a_core_dependency_and_the_old_extra_still_resolves():
    import tomllib

    from loremap.mcp import SDK

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert SDK in project["dependencies"]
    assert project["optional-dependencies"]["mcp"] == []


def test_serve_without_the_sdk_names_the_commands_that_mend_it(project, cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mcp.server", None)  # import mcp.server now fails
    result = cli("serve")
    assert result.code == 1
    assert result.err.count("\n") == 1
    assert "`pipx install --force ./loremap`" in result.err
    assert f"`{sys.executable} -m pip install 'mcp>=2.3,<3'`" in result.err


def test_the_readme_s_first_command_leaves_a_fresh_clone_unmodified(tmp_path):
    """The committed map pages are what `loremap init` and `loremap map` render from the
    committed code: a page left stale by a code change (the cause once) fails here. Run
    `loremap index` and commit `.loremap/` with the change. Checks HEAD, in a clone."""
    import os
    import subprocess
    import sys

    import pytest

    def git(*args: str, cwd: Path = ROOT) -> str:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              check=True).stdout

    if not (ROOT / ".git").exists() or git("rev-parse", "--is-shallow-repository") != "false\n":
        pytest.skip("needs the repository's whole history (co-change edges come from it)")
    clone = tmp_path / "clone"
    git("clone", "-q", "--no-hardlinks", str(ROOT), str(clone), cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOREMAP_", "PYTHON"))}
    env.update(PYTHONPATH=str(clone / "src"), LOREMAP_HOME=str(tmp_path / "home"),
               LOREMAP_WORKERS="1")
    try:
        for command in ("init", "map"):
            done = subprocess.run([sys.executable, "-m", "loremap", command], cwd=clone,
                                  env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
    finally:
        # `map` is a read: as for a user, it started the daemon, which must not outlive the test.
        subprocess.run([sys.executable, "-m", "loremap", "daemon", "stop"], cwd=clone, env=env,
                       capture_output=True, text=True, timeout=120)
    changed = git("status", "--porcelain", cwd=clone)
    assert changed == "", f"regenerate the map pages (`loremap index`) and commit them:\n{changed}"
