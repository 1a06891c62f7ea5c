"""`loremap bundle [--output FILE]`: build loremap's Claude Desktop extension (mcp/bundle.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.cli import context
from loremap.cli.output import emit_json, lines


def run(args: argparse.Namespace) -> int:
    import loremap
    from loremap.mcp.bundle import build

    output = Path(args.output) if args.output else Path(f"loremap-{loremap.__version__}.mcpb")
    if not output.is_absolute():
        output = context.cwd() / output
    if output.is_dir():
        from loremap.errors import InvalidInput

        raise InvalidInput(f"--output {args.output}: is a folder; name the .mcpb file to write")
    done = build(output)
    if args.json:
        emit_json({"path": str(done.path), "files": done.files, "bytes": done.size,
                   "manifest": done.manifest})
        return 0
    lines([f"wrote {done.path} ({done.files} files, {done.size // 1024} KiB)",
           "install: open it in Claude Desktop (Settings > Extensions), choose the repository; "
           "the desktop app needs uv to install loremap's dependencies"])
    return 0
