"""What users expect of a command line: a versioned `--json` whose keys are the documented ones,
`--quiet` (before or after the command) that keeps only the result and the errors, progress on a
terminal only, and completion scripts that a real bash completes from."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli_process

DOC = Path(__file__).resolve().parents[1] / "docs" / "json.md"

# The documented commands this test can run in a plain project, as the table names them.
RUNS = {
    "init": ["init"],
    "index": ["index"],
    "remember": ["remember", "-t", "bug", "--title", "Login breaks on expiry", "-m", "Refresh."],
    "list": ["list"],
    "search": ["search", "login", "expiry"],
    "show PATH": ["show", "src/auth/login.ts"],
    "map": ["map"],
    "reindex": ["reindex"],
    "doctor": ["doctor"],
    "handoff save": ["handoff", "save", "--goal", "ship the login fix"],
    "handoff list": ["handoff", "list"],
    "connect --list": ["connect", "--list"],
    "embed status": ["embed", "status"],
    "judge status": ["judge", "status"],
    "completions SHELL": ["completions", "bash"],
    "bundle": ["bundle", "-o", "{tmp}/loremap.mcpb"],
    "outcome": ["outcome", "procedure-renew-the-login-token", "success"],
    "errors": ["errors"],
    "dedupe": ["dedupe"],
    "verify": ["verify", "login", "breaks", "on", "expiry"],
    "forget": ["forget", "bug-login-breaks-on-expiry"],
    "audit log": ["audit", "log"],
    "audit verify": ["audit", "verify"],
    "serve token add": ["serve", "token", "add", "ci", "--role", "read-only", "--tokens",
                        "{tmp}/tokens.toml"],
    "serve token list": ["serve", "token", "list", "--tokens", "{tmp}/tokens.toml"],
    "serve token revoke": ["serve", "token", "revoke", "ci", "--tokens", "{tmp}/tokens.toml"],
}


def documented() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (.+) \|", line)
        if match:
            table[match.group(1)] = re.findall(r"`(\w+)`", match.group(2))
    return table


def test_every_json_object_starts_with_its_version_and_holds_the_documented_keys(
        repo, tmp_path):
    table = documented()
    assert set(RUNS) <= set(table), set(RUNS) - set(table)
    for name, argv in RUNS.items():
        argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
        if name == "outcome":  # a procedure to count an outcome of
            assert run_cli_process("remember", "-t", "procedure", "--title",
                                   "Renew the login token", "-m", "Call refresh.",
                                   cwd=repo).returncode == 0
        done = run_cli_process(*argv, "--json", cwd=repo)
        assert done.returncode == 0, (name, done.stderr)
        data = json.loads(done.stdout)
        assert next(iter(data)) == "json_version" and data["json_version"] == 1, name
        assert list(data) == table[name], name


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_keeps_the_result_and_drops_the_warnings(repo, where):
    assert run_cli_process("init", cwd=repo).returncode == 0
    # A warning every search of this project prints: a note file the index cannot read.
    (repo / ".loremap" / "notes" / "broken.md").write_text("---\ntype: [\n---\n",
                                                           encoding="utf-8")
    loud = run_cli_process("search", "login", cwd=repo)
    assert "warning" in loud.stderr
    argv = ["-q", "search", "login"] if where == "before" else ["search", "login", "--quiet"]
    quiet = run_cli_process(*argv, cwd=repo)
    assert quiet.returncode == loud.returncode
    assert quiet.stdout == loud.stdout
    assert quiet.stderr == ""


def test_quiet_keeps_errors(repo):
    done = run_cli_process("-q", "show", "no-such-note", cwd=repo)
    assert done.returncode == 1
    assert done.stderr.startswith("loremap: error:")


def _on_a_terminal(argv: list[str], cwd: Path) -> str:
    """What `loremap ARGV` draws on stderr when stderr is a terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "loremap", *argv], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return drawn.decode("utf-8", "replace")


def test_progress_is_drawn_on_a_terminal_and_never_with_quiet_or_json_or_a_pipe(repo):
    assert "indexing [" in _on_a_terminal(["init"], repo)
    assert "indexing [" in _on_a_terminal(["index"], repo)
    assert "indexing [" not in _on_a_terminal(["index", "--quiet"], repo)
    assert "indexing [" not in _on_a_terminal(["index", "--json"], repo)
    assert run_cli_process("index", cwd=repo).stderr == ""  # a pipe is not a terminal


def test_bash_completes_commands_options_and_choices_from_the_script(tmp_path, repo):
    done = run_cli_process("completions", "bash", cwd=repo)
    assert done.returncode == 0, done.stderr
    script = tmp_path / "loremap.bash"
    script.write_text(done.stdout, encoding="utf-8")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source {script}\n"
                 f"COMP_WORDS=(loremap {line}); COMP_CWORD={len(words)}\n"
                 f"COMP_LINE='loremap {line}'; COMP_POINT=${{#COMP_LINE}}\n"
                 f"_shtab_loremap loremap '{words[-1]}' '{words[-2] if len(words) > 1 else ''}'\n"
                 'printf "%s\\n" "${COMPREPLY[@]}"\n')
        out = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert complete("sea") == ["search"]
    assert complete("search", "--bu") == ["--budget"]
    assert complete("remember", "--type", "go") == ["gotcha"]
    assert "--quiet" in complete("index", "--q")


def test_completions_for_an_unknown_shell_is_refused_in_one_line(repo):
    done = run_cli_process("completions", "cmd.exe", cwd=repo)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "invalid choice: 'cmd.exe'" in done.stderr


def test_an_error_after_a_half_drawn_bar_starts_its_own_line(monkeypatch):
    import io

    from loremap.codemap import index

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    show = index.tty_progress("indexing")
    assert show is not None
    show(1, 3)
    index.end_progress()
    assert screen.getvalue().endswith("1/3\n")
    show(3, 3)
    index.end_progress()  # a finished bar has ended its line already
    assert screen.getvalue().endswith("3/3\n") and not screen.getvalue().endswith("\n\n")
