"""`loremap map [MODULE]`: the level-0 map of the repository, or one module's page."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.errors import NotFound


def _module(raw: str, root: Path) -> str:
    """A module argument as the index names it: repository-relative, no trailing '/'."""
    candidate = (Path.cwd() / raw).resolve()
    try:
        rel = candidate.relative_to(root).as_posix()
    except ValueError:
        rel = raw
    return "" if rel in (".", "./", "") else rel.strip("/")


def run(args: argparse.Namespace) -> int:
    from loremap.codemap.render import MODULES_DIR, did_you_mean, module_label, module_slug

    app = App.open()
    try:
        app.index_code()
        assert app.loremap_dir is not None and app.root is not None
        if args.module is None:
            path = app.loremap_dir / "map.md"
            label = "map"
        else:
            module = _module(args.module, app.root)
            path = app.loremap_dir / MODULES_DIR / f"{module_slug(module)}.md"
            label = module_label(module)
            if not path.is_file():
                hint = did_you_mean(module, app.store.module_summaries())
                raise NotFound(f"no module {label} in the code map" + (f"; {hint}" if hint else
                               " (modules are folders with source files; see `loremap map`)"))
        text = path.read_text(encoding="utf-8")
    finally:
        app.close()
    if args.json:
        emit_json({"module": label, "path": str(path), "text": text})
        return 0
    warn(app.notices)
    lines([text.rstrip("\n")])
    return 0
