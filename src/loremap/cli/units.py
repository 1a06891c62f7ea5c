"""systemd user units for the daemon: a `.socket` that systemd listens on and a `.service` it
starts on the first connection (socket activation), written for this installation.

The socket's path carries the installation's id (`loremap.wire.socket_path`), and the service
must run this installation's Python, so the units are generated here rather than copied from a
file: `loremap daemon units` prints them, `--write` puts them in `~/.config/systemd/user/`.
The daemon adopts the socket systemd passes (`LISTEN_FDS`) and still exits when idle: systemd
keeps listening and starts it again on the next connection.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from loremap import wire

SOCKET_UNIT = "loremap.socket"
SERVICE_UNIT = "loremap.service"


def units(environ: Mapping[str, str]) -> dict[str, str]:
    """The unit files by name, for the socket this installation's clients connect to."""
    path = wire.socket_path(environ)
    return {
        SOCKET_UNIT: (
            "[Unit]\n"
            "Description=loremap daemon socket (project memory for AI coding agents)\n\n"
            "[Socket]\n"
            f"ListenStream={path}\n"
            "SocketMode=0600\n"
            "DirectoryMode=0700\n\n"
            "[Install]\n"
            "WantedBy=sockets.target\n"),
        SERVICE_UNIT: (
            "[Unit]\n"
            "Description=loremap daemon (hooks and MCP sessions, warm)\n"
            f"Requires={SOCKET_UNIT}\n\n"
            "[Service]\n"
            "Type=simple\n"
            f"ExecStart={sys.executable} -m loremap.daemon\n"
            # An idle exit is a normal end: systemd listens again and restarts it on demand.
            "Restart=on-failure\n"
            "SuccessExitStatus=0 1\n"),
    }


def unit_dir(environ: Mapping[str, str]) -> Path:
    config = environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if config and os.path.isabs(config) else Path(
        environ.get("HOME", "~")).expanduser() / ".config"
    return base / "systemd" / "user"


def write(environ: Mapping[str, str]) -> list[Path]:
    """Write the units into the user's systemd folder; the paths written."""
    folder = unit_dir(environ)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in units(environ).items():
        target = folder / name
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
