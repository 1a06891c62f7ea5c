"""`loremap judge enable --model NAME|PATH | status | disable` (see use/verify)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.errors import InvalidInput
from loremap.use.verify import Judge, disable_judge, enable_judge, judge_status


def run(args: argparse.Namespace) -> int:
    if args.model is not None and args.action != "enable":
        raise InvalidInput(f"--model goes with `enable`: `loremap judge enable --model "
                           f"{args.model}`")
    if args.action == "enable" and not args.model:
        raise InvalidInput("which judge? `loremap judge enable --model NAME` (a Hugging Face "
                           "NLI cross-encoder, e.g. cross-encoder/nli-distilroberta-base) or "
                           "--model PATH (a model folder)")
    with App.open() as app:
        if args.action == "enable":
            # A download the user asked for by name shows its bars even with --quiet.
            judge = enable_judge(app, args.model, download_progress=not args.json)
            warn(list(judge.warnings))
        elif args.action == "disable":
            disable_judge(app)
            judge = Judge("", (), "")
        else:
            judge = judge_status(app)
    if args.json:
        emit_json({"judge": judge.spec, "labels": list(judge.labels), "problem": judge.problem})
    elif not judge.spec:
        lines(["no local judge: `loremap verify` answers unknown with the evidence (`loremap "
               "judge enable --model NAME` sets one; pip install 'loremap[embed]' first)"])
    elif judge.problem:
        lines([f"judge {judge.spec}: degraded: {judge.problem}; verify answers unknown"])
    else:
        lines([f"judge {judge.spec} ({', '.join(judge.labels)}): `loremap verify` and the MCP "
               "verify tool use it"])
    return 0
