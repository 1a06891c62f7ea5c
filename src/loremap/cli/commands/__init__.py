"""One module per `loremap` command, each with `run(args) -> exit code`, imported on demand."""

from __future__ import annotations
