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
