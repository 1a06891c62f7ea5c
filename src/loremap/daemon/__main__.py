"""`python -m loremap.daemon`: run the daemon in this process (what `wire.spawn` starts)."""

from __future__ import annotations

import logging
import os
import sys


def run_foreground() -> int:
    """Run the daemon here, logging to `<logs>/daemon.log`, then end the process: 0, or 1 when
    one already runs.

    Trigger: the daemon stops while a connection's thread still runs (an MCP session, the SDK
    still being imported in the background). Why: finalising the interpreter under a running
    daemon thread can abort it (SIGABRT on a lock held at shutdown). Outcome: the sockets and
    Apps are closed by `serve`, the log is flushed, and the process ends with `os._exit`."""
    from loremap.daemon.server import LOG_NAME, serve
    from loremap.logs import log_path

    path = log_path(LOG_NAME)
    path.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, filename=path,
                        format="%(asctime)s %(process)d %(message)s")
    code = serve()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(run_foreground())
