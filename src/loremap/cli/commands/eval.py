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
from loremap.cli.commands.search import request_scope
from loremap.cli.output import emit_json, lines, warn

RANKED = 50  # items ranked per query (the metrics look at the top 10)


def run(args: argparse.Namespace) -> int:
    from loremap.search import Engine, Request, SearchConfig
    from loremap.search.evaluate import Case, compare, format_report, load_dataset, report_json
    from loremap.search.evaluate import score as score_cases
    from loremap.search.federated import Federated

    cases = load_dataset(Path(args.dataset))
    base_config = SearchConfig.parse(args.tuning) if args.tuning is not None else None
    other_config = SearchConfig.parse(args.compare) if args.compare is not None else None
    scope = request_scope(args)
    app = App.open(require_project=False)
    try:
        warnings = app.prepare_search()

        def ranker(engine: Engine | Federated) -> Callable[[Case], list[str]]:
            def rank(case: Case) -> list[str]:
                request = Request(case.query, case.terms, budget=None, limit=RANKED,
                                  **scope)  # type: ignore[arg-type]
                return [item.target for item in engine.rank(request, render_items=False)]
            return rank

        base_engine = app.engine(base_config)
        base = score_cases(cases, ranker(base_engine))
        base_label = base_engine.config.describe()
        compared = None
        if other_config is not None:
            other = score_cases(cases, ranker(app.engine(other_config)))
            compared = (other_config.describe(), other, compare(base, other))
    finally:
        app.close()
    if args.json:
        emit_json({**report_json(base, compared, base_label), "warnings": warnings})
        return 0
    warn(warnings)
    lines(format_report(base, base_label, compared))
    return 0
