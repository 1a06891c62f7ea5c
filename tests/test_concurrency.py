"""Many processes writing one vault, and writers killed at random points."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loremap.vault.layout import Vault

WRITER = Path(__file__).with_name("writer.py")


def spawn(*args: str, stdout: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WRITER), *args], stdout=stdout,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


@pytest.mark.slow
def test_four_processes_times_100_remember_calls_give_400_notes(project, cli):
    workers = [spawn("concurrent", str(project), str(w), "100") for w in range(4)]
    for proc in workers:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    files = list((project / ".loremap" / "notes").glob("*.md"))
    assert len(files) == 400
    shared = {p.stem for p in files if p.stem.startswith("gotcha-shared-title")}
    assert shared == {"gotcha-shared-title"} | {f"gotcha-shared-title-{n}" for n in
                                                 range(2, 201)}
    listed = json.loads(cli("list", "--json").out)
    assert len(listed["notes"]) == 400 and listed["warnings"] == []
    doctor = json.loads(cli("doctor", "--json").out)
    assert doctor["ok"], doctor
    index = [f for f in doctor["findings"] if f["check"] == "index"]
    assert index[0]["message"] == "index matches the vault"
    assert not list((project / ".loremap" / "notes").glob(".*.tmp"))


def kill_after(proc: subprocess.Popen[str], lines: int, delay: float = 0.0) -> bool:
    """SIGKILL `proc` once it has printed `lines` lines (and `delay` seconds more, which only
    picks the kill point); whether the kill, not an exit, ended it."""
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(lines):
        if not proc.stdout.readline():
            break
    if delay:
        time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return proc.returncode == -signal.SIGKILL


def clear(vault: Vault) -> None:
    """Delete every note file, so that the next writer's kill is checked (and `doctor` reads)
    only the notes it wrote: the checks cost what one writer wrote, not all fifty's (doctor's
    secret scan of ~100 notes of 50-100 KB took a second a call)."""
    for file in vault.scan():
        file.path.unlink()


def check_not_torn(vault: Vault) -> int:
    """Every note file parses and its body is one whole payload; return how many there are."""
    files = vault.scan()
    for file in files:
        body = vault.load(file).note.body
        first, last = body.splitlines()[0], body.splitlines()[-1]
        assert first.startswith("payload ") and last == "end " + first.removeprefix("payload ")
    return len(files)


@pytest.mark.slow
def test_a_writer_killed_at_random_points_never_leaves_a_torn_note(project, cli):
    rng = random.Random(20261130)
    vault = Vault(project / ".loremap", "project", 262144, 5.0)
    kills = written = 0
    for seed in range(50):
        kills += kill_after(spawn("crash", str(project), str(seed), stdout=subprocess.PIPE),
                            rng.randint(0, 4))
        written += check_not_torn(vault)
        fixed = cli("doctor", "--fix", "--json")
        after = json.loads(cli("doctor", "--json").out)
        assert after["ok"], (fixed.out, after)
        assert not vault.temp_files()
        if seed < 49:
            clear(vault)
    assert kills >= 45  # nearly every writer was killed mid-run, not after finishing
    assert written >= 45  # and most had written whole notes before the kill
    notes = json.loads(cli("list", "--json").out)["notes"]
    assert len(notes) == len(vault.scan())


def batch_sizes(vault: Vault) -> dict[str, int]:
    """How many facts of each batch (`Batch <tag> fact <k>`) are note files."""
    sizes: dict[str, int] = {}
    for file in vault.scan():
        title = vault.load(file).note.title
        tag = title.removeprefix("Batch ").rsplit(" fact ", 1)[0]
        sizes[tag] = sizes.get(tag, 0) + 1
    return sizes


@pytest.mark.slow
def test_a_two_fact_write_killed_at_random_points_lands_whole_or_not_at_all(project, cli):
    rng = random.Random(20261201)
    vault = Vault(project / ".loremap", "project", 262144, 5.0)
    kills = written = 0
    for seed in range(50):
        # A random point inside the next batch (one takes ~30 ms here), not only its start.
        kills += kill_after(spawn("batch", str(project), str(seed), stdout=subprocess.PIPE),
                            rng.randint(1, 3), rng.uniform(0, 0.05))
        fixed = cli("doctor", "--fix", "--json")
        after = json.loads(cli("doctor", "--json").out)
        assert after["ok"], (fixed.out, after)
        sizes = batch_sizes(vault)
        assert set(sizes.values()) <= {2}, (seed, sizes)  # never one fact of the two
        assert not vault.temp_files()
        written += len(sizes)
        if seed < 49:
            clear(vault)
    assert kills >= 45
    assert written >= 45
    notes = json.loads(cli("list", "--json").out)["notes"]
    assert len(notes) == len(vault.scan())
