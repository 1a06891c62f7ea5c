"""`loremap eval FILE.jsonl`: score the search on questions whose answers are known.

Each query runs through the same engine as `loremap search` (no budget, no abstention: the
ranking is what is scored), its top items compared with the gold note ids or file paths.
`--compare` runs a second configuration over the same queries for a paired difference.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from loremap.app import App
from loremap.cli.commands.search import question
from loremap.cli.output import emit_json, lines, progress, warn
from loremap.use.fresh import ALWAYS
from loremap.use.recall import prepare, ranker

RANKED = 50  # items ranked per query (the metrics look at the top 10)


def run(args: argparse.Namespace) -> int:
    from loremap.search import SearchConfig
    from loremap.search.evaluate import Case, compare, format_report, load_dataset, report_json
    from loremap.search.evaluate import score as score_cases

    cases = load_dataset(Path(args.dataset))
    base_config = SearchConfig.parse(args.tuning) if args.tuning is not None else None
    other_config = SearchConfig.parse(args.compare) if args.compare is not None else None
    scope = question(args)._replace(limit=RANKED, budget=0)
    with App.open(require_project=False) as app:
        warnings = prepare(app, ALWAYS)

        def scorer(config: SearchConfig | None) -> Callable[[Case], list[str]]:
            rank = ranker(app, scope, config)
            return lambda case: rank(case.query, case.terms)

        base_config = base_config or SearchConfig.parse(app.settings.get_str("search.tuning"))
        base = score_cases(cases, scorer(base_config), progress=progress(args, "scoring"))
        base_label = base_config.describe()
        compared = None
        if other_config is not None:
            other = score_cases(cases, scorer(other_config),
                                progress=progress(args, "scoring --compare"))
            compared = (other_config.describe(), other, compare(base, other))
    if args.json:
        emit_json({**report_json(base, compared, base_label), "warnings": warnings})
        return 0
    warn(warnings)
    lines(format_report(base, base_label, compared))
    return 0
