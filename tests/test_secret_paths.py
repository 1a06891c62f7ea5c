"""A credential is refused on every write path, in every field, before anything is rendered;
a hand-written note holding one is quarantined at index time; the session record keeps none.

Every fake credential is assembled at run time so this file holds no literal token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from test_bad_input import assert_refused, index_rows, snapshot
from test_hook_events import Transcript, base, hook
from test_mcp import fails, run

_ALPHABET = "Zq7Rk2Lm9Xp4Wd8Hs3Nf6Tb1Vc5Gy0JuEaOiPlKmNbQwErTyUuIoPaSdFgHjKlZxCvBnMq1w2e3r4t5y6"


def _random(length: int, offset: int = 0) -> str:
    return ((_ALPHABET * (length // len(_ALPHABET) + 2))[offset:])[:length]


_BODY_LINES = [_random(64, i * 7) for i in range(3)]
KEY = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_BODY_LINES)
       + "\n-----END RSA PRIVATE KEY-----")
ONE_LINE_KEY = KEY.replace("\n", " ")
AZURE = "AccountName=shop;AccountKey=" + _random(86) + "==;EndpointSuffix=core.windows.net"
SENDGRID = "SG." + _random(22) + "." + _random(43)
PASSPHRASE = "password: correct-horse-battery-staple"


@pytest.fixture
def seeded(project: Path, cli: Any) -> Path:
    assert cli("remember", "-t", "concept", "--title", "Authentication", "-m",
               "Sessions use JWT.").code == 0
    return project


def _names(project: Path) -> list[str]:
    return sorted(p.name for p in (project / ".loremap" / "notes").iterdir())


@pytest.mark.parametrize(("args", "needle"), [
    (["--title", f"Deploy key {ONE_LINE_KEY}", "-m", "Rotate it."], "in title"),
    (["--title", "Deploy", "--tag", PASSPHRASE, "-m", "Rotate it."], "in tags[0]"),
    (["--title", "Deploy", "--tag", KEY, "-m", "Rotate it."], "in tags[0]"),
    (["--title", "Storage", "-m", f"The connection string:\n{AZURE}"], "line 2 of the body"),
    (["--title", "Mail", "-m", f"SENDGRID_API_KEY={SENDGRID}"], "line 1 of the body"),
], ids=["one-line-key-in-title", "passphrase-in-tag", "key-in-tag", "azure-in-body",
        "sendgrid-in-body"])
def test_cli_remember_refuses_a_secret_in_any_field_and_changes_nothing(seeded, cli, args,
                                                                        needle):
    before = snapshot(seeded)
    result = cli("remember", "-t", "gotcha", *args)
    assert_refused(result, "refused:", needle, "--quarantine")
    assert _BODY_LINES[0] not in result.err and "horse" not in result.err
    assert snapshot(seeded) == before
    assert index_rows(seeded) == 1
    assert not any("begin" in name or "key" in name for name in _names(seeded))


def test_a_one_line_key_in_a_quarantined_title_is_redacted_before_the_file_name(seeded, cli):
    result = cli("remember", "-t", "gotcha", "--title", f"Deploy key {ONE_LINE_KEY}",
                 "--quarantine", "-m", "Rotate it.")
    assert result.code == 0, result.err
    (written,) = set(_names(seeded)) - {"concept-authentication.md"}
    text = (seeded / ".loremap" / "notes" / written).read_text(encoding="utf-8")
    assert _BODY_LINES[0][:16].lower() not in written and _BODY_LINES[0] not in text
    assert "status: quarantined" in text


def test_forget_refuses_a_secret_in_the_reason_and_changes_nothing(seeded, cli):
    before = snapshot(seeded)
    for reason in (KEY, PASSPHRASE):
        result = cli("forget", "concept-authentication", "--reason", reason)
        assert_refused(result, "in the reason", "nothing was changed")
    assert snapshot(seeded) == before


def test_mcp_remember_refuses_a_secret_kind_the_old_rules_missed(project):
    async def body(c: Any) -> str:
        return await fails(c, "remember", {"facts": [
            {"type": "gotcha", "title": "Storage account", "body": f"Use {AZURE} in prod."}]})

    message = run(project, body)
    assert "Azure storage key" in message and "facts[0].body" in message
    assert _random(86) not in message
    assert _names(project) == []


def test_handoff_save_refuses_a_secret_in_a_section(project, cli):
    for args in (["--next", f"export SENDGRID={SENDGRID}"], ["--state", ONE_LINE_KEY],
                 ["--decision", f'{PASSPHRASE.replace(": ", ": ")}']):
        result = cli("handoff", "save", "--goal", "Ship the mailer", *args)
        assert_refused(result, "refused:", "handoff")
    assert list((project / ".loremap" / "handoffs").glob("*.md")) == []


_HAND_WRITTEN = """---
id: gotcha-staging-database
type: gotcha
title: Staging database
status: active
---
# Staging database

Connect with the deploy key below; it rotates monthly.

{key}
"""


def test_a_hand_written_note_with_a_key_is_quarantined_at_index_and_never_recalled(seeded,
                                                                                    cli):
    path = seeded / ".loremap" / "notes" / "gotcha-staging-database.md"
    path.write_text(_HAND_WRITTEN.format(key=KEY), encoding="utf-8")
    before = path.read_bytes()
    for command in (["list", "--json"], ["reindex", "--json"]):  # reconcile, then rebuild
        assert cli(*command).code == 0
        found = json.loads(cli("search", "staging database deploy key", "--json").out)
        assert found["items"] == [], found
    listed = json.loads(cli("list", "--status", "quarantined", "--json").out)
    assert [n["id"] for n in listed["notes"]] == ["gotcha-staging-database"], listed
    doctor = cli("doctor")
    assert doctor.code == 1
    assert ".loremap/notes/gotcha-staging-database.md line 11 holds a private key block" in \
        doctor.out + doctor.err
    assert ('`loremap forget gotcha-staging-database --erase --reason "leaked secret"`'
            in doctor.out + doctor.err)
    assert path.read_bytes() == before  # the user's file is never rewritten

    path.write_text(_HAND_WRITTEN.format(key="(kept in the team vault)"), encoding="utf-8")
    assert cli("list").code == 0
    found = json.loads(cli("search", "staging database deploy key", "--json").out)
    assert [i["id"] for i in found["items"]][:1] == ["gotcha-staging-database"]
    assert cli("doctor").code == 0


def test_the_pre_compact_record_keeps_no_key_and_no_token_fragment(project):
    t = Transcript(project / "t.jsonl")
    t.prompt(f"install this deploy key:\n{KEY}\nthen retry")
    token = "ghp_" + _random(36)
    long_command = "curl -s https://api.github.com/user " + "-H 'Accept: json' " * 8
    ids = t.call(50_000,
                 ("Bash", {"command": f"cat > id_rsa <<'EOF'\n{KEY}\nEOF"}),
                 ("Bash", {"command": long_command[:190] + f" -u me:{token}"}),
                 ("Bash", {"command": "ssh-add id_rsa"}))
    t.error(ids[2], f"bad key:\n{KEY}")
    assert hook("pre-compact", base(project, "PreCompact", trigger="auto")).stdout == ""
    record = next((project / ".loremap" / "sessions").glob("*.record.md")).read_text("utf-8")
    assert "install this deploy key" in record and "ssh-add id_rsa" in record
    for line in _BODY_LINES:
        for start in range(0, len(line) - 8, 8):
            assert line[start : start + 8] not in record, record
    assert token[:8] not in record and _random(36)[:8] not in record, record
