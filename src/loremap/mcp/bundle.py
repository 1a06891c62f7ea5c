"""`loremap bundle`: loremap's MCP server as a Claude Desktop extension (an `.mcpb` file).

An MCP Bundle is a zip with a `manifest.json` (the MCPB manifest, version 0.4) that a desktop
client installs with one click. The bundle is of the `uv` type: it carries loremap's own code
(copied from this installation, so a clone, an editable install and a wheel all give the same
files), a `pyproject.toml` naming loremap's run-time dependencies (read from this installation's
metadata, extras left out), and `server.py`, which puts the bundled code first on `sys.path` and
runs `loremap serve`. The client installs the dependencies with uv and starts the server; it
asks once for the repository whose memory the server serves (`user_config.project`, given to the
server as `LOREMAP_PROJECT_DIR`: a desktop client sends no roots of its own).

Why not a bundle with its dependencies inside (`python` type): the grammars and the SDK are
compiled wheels per platform and Python version, so one file would serve one machine; the `uv`
type stays a few hundred kilobytes and installs what each machine needs. The zip is
reproducible: sorted entries, fixed times, no bytecode.
"""

from __future__ import annotations

import io
import json
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import loremap
from loremap.mcp.catalogue import tool_definitions

MANIFEST_VERSION = "0.4"
ENTRY = "server.py"
_STAMP = (2026, 1, 1, 0, 0, 0)  # every entry's time: the same code gives the same bytes
_SKIP = {"__pycache__"}

SERVER_PY = '''"""loremap's MCP server as the desktop client starts it (loremap/mcp/bundle.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from loremap.cli import main  # noqa: E402 - the bundled code, first on the path

sys.exit(main(["serve"]))
'''


class Bundle(NamedTuple):
    path: Path
    files: int
    size: int
    manifest: dict[str, Any]


def dependencies() -> list[str]:
    """loremap's run-time requirements as this installation declares them, extras left out."""
    found = metadata.requires("loremap") or []
    return sorted(r for r in found if "extra ==" not in r)


def manifest() -> dict[str, Any]:
    """The MCPB manifest of this installation."""
    tools = [{"name": t["name"], "description": t["description"]}
             for t in tool_definitions("lean")]
    return {
        "manifest_version": MANIFEST_VERSION,
        "name": "loremap",
        "display_name": "loremap",
        "version": loremap.__version__,
        "description": "Project memory for AI coding agents: the map of a repository's code "
                       "and the lore of the project, as markdown in the repository.",
        "long_description": (
            "loremap recalls the right slice of a project's decisions, bugs, gotchas, "
            "procedures and code map for each question, and records what a session learned "
            "as markdown notes in the repository (`.loremap/notes/`). Choose the repository "
            "when installing; run `loremap init` in it first."),
        "author": {"name": "loremap developers"},
        "license": "MIT",
        "keywords": ["memory", "code-map", "project-memory", "agents"],
        "server": {
            "type": "uv",
            "entry_point": ENTRY,
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--directory", "${__dirname}", ENTRY],
                "env": {"LOREMAP_PROJECT_DIR": "${user_config.project}"},
            },
        },
        "tools": tools,
        # `serve.tools = "full"` in a project's settings adds the tools few sessions need.
        "tools_generated": True,
        "user_config": {
            "project": {
                "type": "directory",
                "title": "Repository",
                "description": "The repository whose memory loremap serves (run `loremap init` "
                               "in it first).",
                "required": True,
            },
        },
        # Windows is not listed: the suite runs on Linux only (docs/install.md).
        "compatibility": {"platforms": ["darwin", "linux"], "runtimes": {"python": ">=3.11"}},
    }


def pyproject() -> str:
    """The bundle's own project file: the dependencies for uv, nothing to build."""
    deps = "".join(f"    {json.dumps(d)},\n" for d in dependencies())
    return ("[project]\n"
            'name = "loremap-desktop"\n'
            f'version = "{loremap.__version__}"\n'
            'requires-python = ">=3.11"\n'
            f"dependencies = [\n{deps}]\n\n"
            "[tool.uv]\n"
            "package = false\n")


def _sources() -> list[tuple[str, bytes]]:
    """The package's files as `src/loremap/...` entries (no bytecode)."""
    root = Path(loremap.__file__).resolve().parent
    out: list[tuple[str, bytes]] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (path.is_dir() or _SKIP.intersection(relative.parts)
                or path.suffix in {".pyc", ".pyo"}):
            continue
        out.append(((Path("src") / "loremap" / relative).as_posix(), path.read_bytes()))
    return out


def build(output: Path) -> Bundle:
    """Write the bundle to `output` (replacing a file there) and say what it holds."""
    from loremap.vault.fs import atomic_write

    data = manifest()
    entries = [("manifest.json", (json.dumps(data, indent=2) + "\n").encode()),
               ("pyproject.toml", pyproject().encode()),
               (ENTRY, SERVER_PY.encode()),
               *_sources()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries:
            info = zipfile.ZipInfo(name, _STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(output, buffer.getvalue())
    return Bundle(output, len(entries), len(buffer.getvalue()), data)
