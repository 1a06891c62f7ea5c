"""What `loremap doctor` says of the daemon (see loremap.daemon)."""

from __future__ import annotations

from collections.abc import Mapping

from loremap import wire
from loremap.memory.doctor import Finding


def health(environ: Mapping[str, str], fix: bool = False) -> list[Finding]:
    """What `loremap doctor` says of this installation's daemon: running and current, stale
    (it runs the code installed before an upgrade; `fix` stops it), or not running."""
    if not wire.enabled(environ):
        return [Finding("ok", "daemon", "off (LOREMAP_DAEMON): every entry point works in its "
                        "own process")]
    try:
        answer = wire.ask({"op": "status"}, environ, connect_s=1.0, answer_s=10.0)
    except wire.Refused as exc:
        return [Finding("error", "daemon", str(exc))]
    if answer is None:
        return [Finding("ok", "daemon", "not running (a hook or `loremap serve` starts it on "
                        "first need)")]
    pid = answer.get("pid")
    if answer.get("stamp") == wire.install_stamp():
        return [Finding("ok", "daemon", f"pid {pid} serves this installation "
                        f"({len(answer.get('projects') or [])} project(s) open)")]
    if fix:
        wire.ask({"op": "stop"}, environ, connect_s=1.0, answer_s=10.0)
    return [Finding("warning", "daemon", f"pid {pid} runs the loremap installed before the "
                    f"last upgrade ({wire.socket_path(environ)}); it exits at its next request, "
                    "`loremap daemon stop` (or `doctor --fix`) ends it now", fixed=fix)]

