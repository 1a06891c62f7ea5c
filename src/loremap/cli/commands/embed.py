"""`loremap embed enable [--model NAME] | status | disable` (see use/embeddings)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress, warn
from loremap.errors import InvalidInput
from loremap.use import embeddings


def run(args: argparse.Namespace) -> int:
    if args.model is not None and args.action != "enable":
        raise InvalidInput(f"--model goes with `enable`: `loremap embed enable --model "
                           f"{args.model}`")

    with App.open() as app:
        if args.action == "status":
            return _status(embeddings.status(app), args.json)
        if args.action == "disable":
            dropped = embeddings.disable(app)
            warn(embeddings.overridden(""))
            if args.json:
                emit_json({"embedder": "", "dropped": dropped})
            else:
                lines([f"vectors are off; dropped the vectors of {count(dropped, 'node')}"])
            return 0
        # A download the user asked for by name shows its bars even with --quiet.
        done = embeddings.enable(app, args.model, progress(args, "embedding"),
                                 download_progress=not args.json)
        warn([*app.take_notices(), *done.warnings,
              *embeddings.overridden(done.embedder)])
    if args.json:
        emit_json({"embedder": done.embedder, "model": done.model,
                   "embedded": done.nodes, "seconds": round(done.seconds, 3)})
    else:
        lines([f"vectors are on with {done.model}: embedded {count(done.nodes, 'node')} in "
               f"{done.seconds:.1f} s; search, the MCP recall and `loremap index` use them"])
    return 0


def _status(found: embeddings.Status, as_json: bool) -> int:
    if as_json:
        emit_json({"embedder": found.embedder, "model": found.model, "problem": found.problem,
                   "indexes": [c._asdict() for c in found.coverage]})
        return 0
    if not found.embedder:
        out = ["vectors are off: `loremap embed enable` turns them on (pip install "
               "'loremap[embed]' first)"]
    else:
        out = [f"embedder {found.embedder}" + (f" ({found.model})" if found.model else "")]
        if found.problem:
            out.append(f"degraded: {found.problem}; search is lexical")
    for c in found.coverage:
        line = f"{c.scope} index: {count(c.nodes, 'node')}"
        if found.model:
            dim = f", {c.dim} dimensions" if c.dim else ""
            line = (f"{c.scope} index: {c.embedded} of {count(c.nodes, 'node')} embedded{dim}, "
                    f"{max(0, c.nodes - c.embedded)} pending")
        out.append(line)
        out += [f"  {n} nodes hold vectors of {m} ({d} dimensions), unused: `loremap reembed` "
                "drops them" for m, d, n in c.others]
        if c.broken:
            out.append(f"  {c.broken} corrupt vectors are skipped: `loremap reembed` "
                       "replaces them")
    lines(out)
    return 0
