"""The per-user daemon: hooks and MCP sessions answered by one warm process, and every way it
can be missing, stale, killed, raced or abused (the client then answers in its own process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loremap import wire

PROMPT = "why does login need a fresh token?"


def daemon_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LOREMAP_DAEMON"}
    # A daemon a failed test leaves behind is gone a minute later.
    return {**env, "LOREMAP_DAEMON_IDLE_S": "60", **extra}


def wait_for(check: Callable[[], bool], within: float = 60.0) -> bool:
    """Whether `check` holds within `within` seconds (a bound for a hung daemon, not a
    measure: the loop returns as soon as it holds)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def status(env: dict[str, str]) -> dict[str, Any] | None:
    return wire.ask({"op": "status"}, env, connect_s=1.0, answer_s=10.0)


def start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: status(env) is not None or proc.poll() is not None)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def env() -> dict[str, str]:
    return daemon_env()


@pytest.fixture
def daemon(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = start(env)
    assert proc.poll() is None
    yield proc
    stop(proc)


@pytest.fixture
def noted(project: Path, cli: Callable[..., Any]) -> Path:
    assert cli("remember", "-t", "gotcha", "--title", "Login needs a fresh token", "-m",
               "login() fails on an expired token", "-f", "src/auth/login.ts").code == 0
    return project


def hook(event: str, payload: dict[str, Any], env: dict[str, str]
         ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "loremap.hook", event],
                          input=json.dumps(payload).encode(), capture_output=True, env=env,
                          timeout=120)


def prompt(project: Path, text: str = PROMPT) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(project),
            "prompt": text}


def requests(env: dict[str, str]) -> int:
    found = status(env)
    assert found is not None
    return int(found["requests"])


def test_a_prompt_through_the_daemon_is_the_prompt_in_process(noted, env, daemon):
    alone = hook("prompt", prompt(noted), {**env, "LOREMAP_DAEMON": "off"})
    before = requests(env)
    warm = hook("prompt", prompt(noted), env)
    assert warm.returncode == 0 and alone.returncode == 0
    assert b"Login needs a fresh token" in warm.stdout
    assert warm.stdout == alone.stdout
    assert requests(env) == before + 2  # the hook's, and this status
    found = status(env)
    assert found is not None and str(noted.resolve()) in found["projects"]


def test_every_event_answers_the_same_through_the_daemon(noted, env, daemon, cli):
    assert cli("remember", "-t", "error", "--title", "The token file is missing", "-m",
               "Run the login first.", "--error", "FileNotFoundError: no token in ~/.app",
               "--command", "make deploy").code == 0
    assert cli("index").code == 0  # the map is current: the daemon injects it, then refreshes
    failed = {"tool_name": "Bash", "tool_input": {"command": "make deploy"}}
    events = [("session-start", {"hook_event_name": "SessionStart", "source": "startup"}),
              ("pre-tool", {"hook_event_name": "PreToolUse", "tool_name": "Read",
                            "tool_input": {"file_path": "src/auth/login.ts"}}),
              ("pre-tool", {"hook_event_name": "PreToolUse", **failed}),
              ("post-tool", {"hook_event_name": "PostToolUse", "tool_name": "Read",
                             "tool_input": {"file_path": "x"}, "tool_response": "x"}),
              ("tool-failure", {"hook_event_name": "PostToolUseFailure", **failed,
                                "error": "Exit code 2\nFileNotFoundError: no token in ~/.app",
                                "is_interrupt": False}),
              ("stop", {"hook_event_name": "Stop", "stop_hook_active": False})]
    log = noted / ".loremap" / "cache" / "errors.jsonl"
    for number, (event, body) in enumerate(events):
        base = {"cwd": str(noted), **body}
        log.unlink(missing_ok=True)  # a failure counts: each side starts from none
        warm = hook(event, {**base, "session_id": f"warm{number}"}, env)
        log.unlink(missing_ok=True)
        alone = hook(event, {**base, "session_id": f"cold{number}"},
                     {**env, "LOREMAP_DAEMON": "off"})
        assert warm.returncode == alone.returncode == 0
        assert warm.stdout.replace(b"warm", b"") == alone.stdout.replace(b"cold", b""), event
        if body.get("tool_name") == "Bash":
            assert b"The token file is missing" in warm.stdout, event


def test_the_thin_client_imports_no_settings_no_index_no_engine(noted, env, daemon):
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "loremap.hook", "prompt"],
                            input=json.dumps(prompt(noted)).encode(), capture_output=True,
                            env=env, timeout=120)
    assert b"Login needs a fresh token" in result.stdout
    ours = {line.rsplit("|", 1)[1].strip() for line in result.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line}
    ours = {name for name in ours if name.startswith("loremap")}
    assert ours == {"loremap", "loremap.hook", "loremap.wire"}


def test_no_daemon_answers_in_process_and_starts_one_for_next_time(noted, env):
    assert status(env) is None
    first = hook("prompt", prompt(noted), env)
    assert b"Login needs a fresh token" in first.stdout
    assert wait_for(lambda: status(env) is not None)
    try:
        before = requests(env)
        second = hook("prompt", prompt(noted), env)
        assert second.stdout == first.stdout
        assert requests(env) == before + 2
    finally:
        assert wire.ask({"op": "stop"}, env) is not None
        assert wait_for(lambda: status(env) is None)


def test_off_never_starts_a_daemon(noted, env):
    off = {**env, "LOREMAP_DAEMON": "off"}
    assert b"Login needs a fresh token" in hook("prompt", prompt(noted), off).stdout
    time.sleep(0.5)  # a spawned daemon would be listening by now on a quiet machine
    assert status(env) is None
    assert not os.path.exists(wire.socket_path(env))


def test_a_socket_left_by_a_killed_daemon_is_reclaimed(noted, env):
    first = start(env)
    path = wire.socket_path(env)
    first.kill()
    first.wait()
    assert os.path.exists(path)  # SIGKILL left the socket file
    assert status(env) is None  # ... which nobody answers on
    assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout
    # The hook answered in process and started a daemon, which took the leftover's place.
    assert wait_for(lambda: status(env) is not None)
    found = status(env)
    assert found is not None and found["pid"] != first.pid
    assert wire.ask({"op": "stop"}, env) is not None
    assert wait_for(lambda: status(env) is None)


def test_a_daemon_killed_mid_stream_loses_no_answer_and_no_write(noted, env, cli):
    proc = start(env)
    outputs = []
    for number in range(6):
        if number == 3:
            proc.kill()
            proc.wait()
        outputs.append(hook("prompt", prompt(noted), env).stdout)
        assert cli("remember", "-t", "decision", "--title", f"Decision number {number}", "-m",
                   f"body of decision {number}").code == 0
    assert all(b"Login needs a fresh token" in out for out in outputs)
    listed = cli("list", "--json")
    titles = {n["title"] for n in json.loads(listed.out)["notes"]}
    assert {f"Decision number {n}" for n in range(6)} <= titles
    found = cli("search", "Decision number 5", "--json")
    assert any("number-5" in i["id"] for i in json.loads(found.out)["items"])
    assert wait_for(lambda: status(env) is not None)  # the client started a new one
    assert wire.ask({"op": "stop"}, env) is not None


def test_two_daemons_racing_to_start_leave_one(env):
    procs = [subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(2)]
    try:
        assert wait_for(lambda: any(p.poll() is not None for p in procs))
        assert sorted(p.poll() for p in procs if p.poll() is not None) == [1]
        live = next(p for p in procs if p.poll() is None)
        found = status(env)
        assert found is not None and found["pid"] == live.pid
    finally:
        for proc in procs:
            stop(proc)


def test_the_daemon_exits_when_idle(env):
    idle = {**env, "LOREMAP_DAEMON_IDLE_S": "1"}
    proc = start(idle)
    assert proc.wait(60) == 0
    assert not os.path.exists(wire.socket_path(idle))


def test_a_deleted_project_fails_open_and_the_others_are_served(noted, env, daemon, tmp_path,
                                                                 cli):
    import shutil

    assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout
    other = tmp_path / "other"
    shutil.copytree(noted, other)
    assert b"Login needs a fresh token" in hook("prompt", prompt(other), env).stdout
    shutil.rmtree(other)
    gone = hook("prompt", prompt(other), env)
    assert gone.returncode == 0 and gone.stdout == b""
    assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout
    assert daemon.poll() is None


def test_bad_requests_get_one_line_and_the_daemon_goes_on(noted, env, daemon):
    path = wire.socket_path(env)

    def raw(data: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(path)
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            return sock.makefile("rb").read()

    too_big = raw(b'{"op": "hook", "payload": "' + b"x" * (wire.MAX_LINE + 10) + b'"}\n')
    assert json.loads(too_big)["ok"] is False and "line over" in json.loads(too_big)["error"]
    for data, words in [(b"not json\n", "bad request"), (b"[1]\n", "bad request"),
                        (b'{"op": "dance", "env": {}}\n', "unknown op"),
                        (b'{"op": "hook", "env": {"A": 1}}\n', "env")]:
        answer = json.loads(raw(data))
        assert answer["ok"] is False and words in answer["error"], answer
    assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout


def test_a_silent_client_does_not_hold_up_the_others(noted, env, daemon):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(wire.socket_path(env))
        assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout
        assert status(env) is not None


def test_another_environment_in_what_only_a_process_can_set_is_answered_in_process(
        noted, env, daemon):
    before = requests(env)
    other = hook("prompt", prompt(noted), {**env, "PGPASSWORD": "other"})
    assert b"Login needs a fresh token" in other.stdout
    # the status of `requests`, the hook's (answered "fallback"), this status
    assert requests(env) == before + 2
    # A daemon runs: the client starts no second one (which would only wait for the lock).
    assert not os.path.exists(wire.spawn_marker(env))


@pytest.mark.skipif(os.getuid() != 0, reason="making a socket another user's needs root")
def test_a_socket_of_another_user_is_refused_in_one_line(noted, env, isolated_home):
    path = wire.socket_path(env)
    wire.private_dir(os.path.dirname(path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as planted:
        planted.bind(path)
        planted.listen(1)
        os.chown(path, 4242, 4242)
        result = hook("prompt", prompt(noted), env)
        assert b"Login needs a fresh token" in result.stdout
        log = (isolated_home / "loremap" / "logs" / "hook.log").read_text(encoding="utf-8")
        assert "belongs to another user (uid 4242)" in log
        assert len(log.splitlines()) == 1
        cli = subprocess.run([sys.executable, "-m", "loremap", "daemon", "status"], env=env,
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode != 0
        assert "belongs to another user" in cli.stderr and len(cli.stderr.splitlines()) == 1


def test_doctor_says_whether_a_daemon_serves_this_installation(noted, env, daemon):
    done = subprocess.run([sys.executable, "-m", "loremap", "doctor"], cwd=noted, env=env,
                          capture_output=True, text=True, timeout=120)
    assert f"ok    daemon: pid {daemon.pid} serves this installation" in done.stdout


def test_the_cli_starts_reports_and_stops_it(env):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "loremap", "daemon", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    assert "no daemon is running" in run("status").stdout
    started = run("start")
    assert started.returncode == 0, started.stderr
    assert "projects open: none" in started.stdout
    found = json.loads(run("status", "--json").stdout)
    assert found["running"] is True and found["stale"] is False and found["pid"] > 0
    assert "stopped the daemon" in run("stop").stdout
    assert "no daemon is running" in run("status").stdout
    off = subprocess.run([sys.executable, "-m", "loremap", "daemon", "start"],
                         env={**env, "LOREMAP_DAEMON": "off"}, capture_output=True, text=True,
                         timeout=60)
    assert off.returncode != 0 and "LOREMAP_DAEMON is off" in off.stderr


def test_an_upgraded_install_makes_the_daemon_step_aside(noted, env, tmp_path):
    """A copy of the package stands for an installation: rewriting one of its files is an
    upgrade. The daemon answers the next request `fallback`, exits, and a new one starts."""
    import shutil

    import loremap

    site = tmp_path / "site"
    shutil.copytree(Path(loremap.__file__).parent, site / "loremap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    copy = {**env, "PYTHONPATH": str(site)}

    def copy_status() -> dict[str, Any] | None:
        """The status as the copy's own client sees it (its socket is the copy's)."""
        done = subprocess.run(
            [sys.executable, "-c", "import json, os; from loremap import wire; "
             "print(json.dumps(wire.ask({'op': 'status'}, os.environ)))"],
            env=copy, capture_output=True, text=True, timeout=60, check=True)
        found: dict[str, Any] | None = json.loads(done.stdout)
        return found

    old = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=copy,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: copy_status() is not None)
        target = site / "loremap" / "hook" / "prompt.py"
        target.write_text(target.read_text(encoding="utf-8") + "\n# upgraded\n",
                          encoding="utf-8")
        doctor = subprocess.run([sys.executable, "-m", "loremap", "doctor"], cwd=noted,
                                env=copy, capture_output=True, text=True, timeout=120)
        assert "warn  daemon: pid" in doctor.stdout
        assert "runs the loremap installed before the last upgrade" in doctor.stdout
        answered = hook("prompt", prompt(noted), copy)
        assert b"Login needs a fresh token" in answered.stdout  # in process, as a fallback
        assert old.wait(60) == 0
        assert wait_for(lambda: copy_status() is not None)  # the client started the new one
        found = copy_status()
        assert found is not None and found["pid"] != old.pid
    finally:
        stop(old)
        subprocess.run([sys.executable, "-m", "loremap", "daemon", "stop"], env=copy,
                       capture_output=True, timeout=60)


def test_a_socket_passed_by_systemd_is_adopted(noted, env):
    """What systemd's socket activation does: listen on the unit's path, start the service
    with the socket as fd 3 and LISTEN_FDS/LISTEN_PID set (the pid is the service's own, so a
    small launcher sets it and execs the daemon)."""
    from loremap.cli.units import SOCKET_UNIT, units

    path = wire.socket_path(env)
    assert f"ListenStream={path}\n" in units(env)[SOCKET_UNIT]
    wire.private_dir(os.path.dirname(path))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    launcher = ("import os, sys; os.dup2(int(sys.argv[1]), 3); "
                "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid())); "
                "os.execv(sys.executable, [sys.executable, '-m', 'loremap.daemon'])")
    proc = subprocess.Popen([sys.executable, "-c", launcher, str(listener.fileno())], env=env,
                            pass_fds=(listener.fileno(),), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    listener.close()  # systemd keeps its own copy; here the daemon holds the only one
    try:
        assert wait_for(lambda: status(env) is not None)
        found = status(env)
        assert found is not None and found["pid"] == proc.pid
        assert b"Login needs a fresh token" in hook("prompt", prompt(noted), env).stdout
    finally:
        stop(proc)
    assert proc.returncode == 0


def test_the_units_are_written_for_this_installation(env, tmp_path):
    written = subprocess.run([sys.executable, "-m", "loremap", "daemon", "units", "--write"],
                             env={**env, "XDG_CONFIG_HOME": str(tmp_path / "config")},
                             capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    folder = tmp_path / "config" / "systemd" / "user"
    service = (folder / "loremap.service").read_text(encoding="utf-8")
    assert f"ExecStart={sys.executable} -m loremap.daemon\n" in service
    assert "Requires=loremap.socket" in service
    assert f"ListenStream={wire.socket_path(env)}" in (folder / "loremap.socket").read_text(
        encoding="utf-8")
    assert "systemctl --user enable --now loremap.socket" in written.stdout


def test_an_mcp_session_through_the_daemon_is_the_sdk_server(noted, env, daemon, monkeypatch):
    """The SDK's own client launches `loremap serve`, which relays to a session in the daemon:
    two agents at once, writing and recalling, lose nothing."""
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)  # the SDK hands it to the server
    import anyio
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "loremap", "serve"],
                                   cwd=str(noted), env=env)

    def text(result: types.CallToolResult) -> str:
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return block.text

    async def agent(name: str, ids: list[str], seen: list[list[str]]) -> None:
        async with Client(params) as client:
            seen.append([t.name for t in (await client.list_tools()).tools])
            for n in range(4):
                fact = {"type": "bug", "title": f"Agent {name} found bug number {n}",
                        "body": f"bug {n} of agent {name}"}
                result = await client.call_tool("remember", {"facts": [fact]})
                assert not result.is_error, text(result)
                ids.append(text(result).split()[1])
            recalled = text(await client.call_tool("recall", {"query": "fresh token login"}))
            assert "Login needs a fresh token" in recalled

    async def main() -> tuple[list[str], list[list[str]]]:
        ids: list[str] = []
        seen: list[list[str]] = []
        async with anyio.create_task_group() as group:
            group.start_soon(agent, "alpha", ids, seen)
            group.start_soon(agent, "beta", ids, seen)
        return ids, seen

    before = requests(env)
    ids, seen = anyio.run(main)
    assert seen == [["recall", "remember", "read", "map", "handoff", "forget", "outcome",
                     "related"]] * 2
    assert len(set(ids)) == 8
    assert set(ids) <= {p.stem for p in (noted / ".loremap" / "notes").glob("*.md")}
    assert requests(env) >= before + 3  # two sessions went through the daemon
    # ... on the daemon's warm Apps, the ones the hooks use: the project is open there, in no
    # more Apps than two calls at once need.
    found = status(env)
    assert found is not None and str(noted.resolve()) in found["projects"]
    assert 1 <= found["apps"] <= 2


def test_serve_exits_when_no_handshake_comes(noted, env):
    """A client that starts the server and never speaks (cuba-memorys' rule)."""
    proc = subprocess.Popen([sys.executable, "-m", "loremap", "serve"], cwd=noted,
                            env={**env, "LOREMAP_MCP_HANDSHAKE_TIMEOUT_S": "0.5"},
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        assert proc.wait(120) == 0  # stdin still open: the client merely said nothing
        err = proc.stderr.read()
    finally:
        proc.stdin.close()
        proc.stderr.close()
    assert b"no MCP message on stdin within 0.5 s" in err
    assert status(env) is None  # nothing was started for a client that never spoke


@pytest.mark.parametrize("mode", ["daemon", "process"])
def test_sigint_stops_serve(noted, env, mode):
    serve_env = env if mode == "daemon" else {**env, "LOREMAP_DAEMON": "off"}
    daemon_ = start(env) if mode == "daemon" else None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "loremap", "serve"], cwd=noted,
                                env=serve_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-06-18",
                                                "capabilities": {},
                                                "clientInfo": {"name": "t", "version": "1"}}
                                     }).encode() + b"\n")
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) is not None
        proc.stdin.close()
        proc.stdout.close()
    finally:
        if daemon_ is not None:
            stop(daemon_)


def test_session_start_through_the_daemon_refreshes_the_index_after_its_answer(noted, env,
                                                                                daemon):
    (noted / "src" / "billing.py").write_text('"""Invoices and what is owed."""\n\n\n'
                                              "def total_owed(invoices):\n"
                                              "    return sum(invoices)\n", encoding="utf-8")
    started = hook("session-start", {"hook_event_name": "SessionStart", "source": "startup",
                                      "session_id": "s9", "cwd": str(noted)}, env)
    assert b"project-memory" in started.stdout

    def indexed() -> bool:
        found = subprocess.run([sys.executable, "-m", "loremap", "show", "src/billing.py"],
                               cwd=noted, env={**env, "LOREMAP_DAEMON": "off"},
                               capture_output=True, text=True, timeout=60)
        return "total_owed" in found.stdout

    assert wait_for(indexed)


def test_a_slow_request_holds_up_neither_its_project_nor_the_others(noted):
    """The daemon's pool: while one request holds a project's App, the next request on the
    same project gets a second App at once; past the cap it waits for one to be free."""
    import threading

    from loremap.daemon.warm import PER_PROJECT, Warm

    warm = Warm(warm_models=False)
    env = dict(os.environ)
    held = threading.Event()
    release = threading.Event()

    def slow() -> None:
        with warm.use(noted, env):
            held.set()
            release.wait(60)

    threads = [threading.Thread(target=slow) for _ in range(PER_PROJECT)]
    try:
        threads[0].start()
        assert held.wait(60)
        with warm.use(noted, env) as app:  # not blocked by the slow one
            assert app.store.node_count() > 0
        assert warm.open_apps() == 2
        for thread in threads[1:]:
            held.clear()
            thread.start()
            assert held.wait(60)
        assert warm.open_apps() == PER_PROJECT
        waited = threading.Event()

        def one_more() -> None:
            with warm.use(noted, env):
                waited.set()

        extra = threading.Thread(target=one_more)
        extra.start()
        assert not waited.wait(0.3)  # every App is busy: it waits ...
        release.set()
        assert waited.wait(60)  # ... and is served once one is free
        extra.join(60)
        assert warm.open_apps() == PER_PROJECT
    finally:
        release.set()
        for thread in threads:
            if thread.is_alive() or thread.ident:
                thread.join(60)
        warm.close()
    assert warm.open_apps() == 0


def test_cli_reads_through_the_daemon_print_what_they_print_alone(noted, env, daemon):
    def loremap(*args: str, where: Path = noted, mode: str = "auto"
                ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "loremap", *args], cwd=where,
                              env={**env, "LOREMAP_DAEMON": mode}, capture_output=True,
                              text=True, timeout=120)

    cases = [("search", "fresh", "token", "login"), ("search", "login", "--json"),
             ("list",), ("show", "gotcha-login-needs-a-fresh-token"), ("map",),
             ("show", "src/auth/login.ts"), ("search", "--bogus"), ("show", "nothing-here"),
             ("show", "/etc")]
    for args in cases:
        before = requests(env)
        warm, alone = loremap(*args), loremap(*args, mode="off")
        assert (warm.returncode, warm.stdout, warm.stderr) == (
            alone.returncode, alone.stdout, alone.stderr), args
        assert requests(env) == before + 2, args  # the read went through the daemon
    assert loremap("search", "--bogus").returncode == 2
    assert loremap("show", "nothing-here").returncode == 1
    # The caller's folder: a relative path from a subfolder.
    sub = loremap("show", "login.ts", where=noted / "src" / "auth")
    assert sub.returncode == 0 and "src/auth/login.ts" in sub.stdout
    # Help, and every write, stay in the caller's process.
    before = requests(env)
    assert "usage: loremap search" in loremap("search", "--help").stdout
    assert loremap("remember", "-t", "concept", "--title", "Carts", "-m",
                   "What a shopper holds.").returncode == 0
    assert requests(env) == before + 1


@pytest.mark.parametrize("extra", [{}, {"XDG_CACHE_HOME": "/var/tmp/cache-home"},
                                   {"XDG_CACHE_HOME": "relative/ignored"}])
def test_the_socket_folder_is_the_cache_folder_s_without_a_runtime_folder(extra):
    from loremap.config import UserPaths

    env = {"HOME": "/home/someone", **extra}
    assert wire.run_dir(env) == str(UserPaths.from_env(env).cache / "run")
    home = {**env, "LOREMAP_HOME": "/srv/lm"}
    assert wire.run_dir(home) == str(UserPaths.from_env(home).cache / "run")
    runtime = {**env, "XDG_RUNTIME_DIR": "/run/user/1000"}
    assert wire.run_dir(runtime) == "/run/user/1000/loremap"
