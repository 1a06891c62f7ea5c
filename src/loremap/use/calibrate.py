"""`loremap calibrate [--dataset FILE]`: the abstention threshold fitted to this project.

Recall answers "nothing relevant in memory" when none of its best text matches holds
`coverage` (0.3) of the question's IDF mass (and no named entity or close vector answers it:
search/engine.py `Signal`). How much of a question a relevant note holds depends on the
project: notes written as conversation turns hold less of a question than functions do. The
dataset lists questions the memory can answer (`"gold": [ids]`) and questions it cannot
(`"gold": []`), in `loremap eval`'s JSON Lines; each is asked once, and the threshold is the
largest that keeps false abstention (an answerable question refused) at most `MAX_FALSE`
(3 %), which makes true abstention (an unanswerable one refused) as high as that allows.
Without a dataset the questions are the project's own: the log of what the agents asked and
what they opened next (sessions/queries.py, kept by the prompt hook, the pre-tool hook and the
MCP tools unless `search.log_queries` is off). A logged question after which the agent opened
a note or file the index holds is answerable; the log knows no question the memory cannot
answer, so the threshold (which only false abstention bounds) is fitted as above and the true
abstention is not measured: a dataset with unanswerable questions measures it.
The rates before and after are reported on the same questions with 95 % Wilson intervals
(the questions fit the threshold: held-in figures); `--apply` writes it into
`search.tuning` (`coverage=...`, the other keys kept) and what was fitted into
`search.calibrated`, which `loremap doctor` reports.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.memory.doctor import Finding
    from loremap.search.engine import Signal

MAX_FALSE = 0.03  # share of answerable questions a calibrated threshold may refuse
MIN_QUESTIONS = 20  # of each kind, answerable and unanswerable


class Rates(NamedTuple):
    threshold: float
    false_abstention: float  # answerable questions refused
    false_interval: tuple[float, float]
    true_abstention: float | None  # unanswerable questions refused (None: none asked)
    true_interval: tuple[float, float] | None


class Calibration(NamedTuple):
    source: str  # the dataset's file name, or the log's path under .loremap/
    answerable: int
    unanswerable: int
    before: Rates  # with the threshold in force
    after: Rates  # with the fitted one
    applied: bool
    warnings: list[str]


def rates(answerable: Sequence[Signal], unanswerable: Sequence[Signal], threshold: float
          ) -> Rates:
    """The abstention rates `threshold` gives on these questions' signals."""
    from loremap.search.track import wilson

    def refused(signals: Sequence[Signal]) -> int:
        return sum(1 for s in signals if s.always or s.coverage < threshold)

    a, u = refused(answerable), refused(unanswerable)
    if not unanswerable:
        return Rates(threshold, a / len(answerable), wilson(a, len(answerable) - a), None, None)
    return Rates(threshold, a / len(answerable), wilson(a, len(answerable) - a),
                 u / len(unanswerable), wilson(u, len(unanswerable) - u))


def fit(answerable: Sequence[Signal], unanswerable: Sequence[Signal],
        max_false: float = MAX_FALSE) -> Rates:
    """The threshold with the most true abstention whose false abstention is at most
    `max_false`. The rates change only at the questions' coverages: a threshold above a value
    refuses the questions at it. Of the last gap the constraint allows, the middle is taken (a
    margin on both sides for questions not in the dataset), rounded to three places."""
    values = sorted({s.coverage for s in (*answerable, *unanswerable) if not s.always})
    best = rates(answerable, unanswerable, 0.0)
    for n, value in enumerate(values):
        above = values[n + 1] if n + 1 < len(values) else min(1.0, value + 0.01)
        candidate = rates(answerable, unanswerable, round((value + above) / 2, 3))
        if candidate.false_abstention > max_false:
            break  # false abstention only grows with the threshold
        best = candidate
    return best


def calibrate(app: App, dataset: Path | None, freshness: Freshness, apply: bool = False
              ) -> Calibration:
    """Fit the threshold on `dataset`'s questions, or (None) on the logged ones."""
    from loremap.search import Request

    if dataset is None:
        source, cases = _logged(app)
    else:
        source, cases = dataset.name, _dataset(dataset)
    warnings = refresh(app, freshness)
    engine = app.engine()
    yes = [engine.abstention(Request(q, terms=list(t))) for q, t, gold in cases if gold]
    no = [engine.abstention(Request(q, terms=list(t))) for q, t, gold in cases if not gold]
    before = rates(yes, no, engine.config.coverage)
    after = fit(yes, no)
    if apply:
        _persist(app, after, source, len(yes), len(no))
    return Calibration(source, len(yes), len(no), before, after, apply, warnings)


Case = tuple[str, Sequence[str], Sequence[str]]  # query, terms, gold ids


def _dataset(path: Path) -> list[Case]:
    from loremap.search.evaluate import load_dataset

    cases = load_dataset(path, unanswerable=True)
    answerable = sum(1 for c in cases if c.gold)
    if answerable < MIN_QUESTIONS or len(cases) - answerable < MIN_QUESTIONS:
        raise InvalidInput(
            f"{path}: calibrating needs at least {MIN_QUESTIONS} answerable questions "
            f"(\"gold\": [ids]) and {MIN_QUESTIONS} unanswerable ones (\"gold\": []); it has "
            f"{answerable} and {len(cases) - answerable}")
    return [(c.query, c.terms, c.gold) for c in cases]


def _logged(app: App) -> tuple[str, list[Case]]:
    """The logged questions after which the agent opened something the index holds."""
    from loremap.sessions.queries import QUERIES_LOG, asked

    if app.loremap_dir is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository, or "
                           "give --dataset FILE")
    logged = asked(app.loremap_dir)
    held = app.store.existing_ids({node for a in logged for node in a.opened})
    cases: list[Case] = [(a.query, (), [n for n in a.opened if n in held]) for a in logged]
    cases = [c for c in cases if c[2]]
    if len(cases) < MIN_QUESTIONS:
        off = "" if app.settings.get_bool("search.log_queries") else \
            " (search.log_queries is off: nothing is logged)"
        raise InvalidInput(
            f"the log of this project's questions holds {len(cases)} after which the agent "
            f"opened a note or file of the index; calibrating needs at least {MIN_QUESTIONS}"
            f"{off}: let the agents work longer, or give --dataset FILE")
    return f".loremap/{QUERIES_LOG}", cases


def _persist(app: App, after: Rates, source: str, answerable: int, unanswerable: int
             ) -> None:
    from loremap.config import CONFIG_FILE
    from loremap.search import SearchConfig
    from loremap.use.settings import write_settings

    if app.loremap_dir is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository")
    spec = app.settings.get_str("search.tuning").strip()
    if spec and (spec.endswith(".toml") or Path(spec).is_file()):
        raise InvalidInput(f"search.tuning names a file ({spec}): set coverage = "
                           f"{after.threshold:g} in its [search] table")
    pairs = [p for p in spec.split(",") if p.strip() and
             p.partition("=")[0].strip() != "coverage"]
    tuning = ",".join([*(p.strip() for p in pairs), f"coverage={after.threshold:g}"])
    SearchConfig.parse(tuning)  # refuses a spec the engine would refuse, before writing
    day = dt.datetime.now(dt.UTC).date().isoformat()
    unanswered = (f"{unanswerable} unanswerable, {after.true_abstention:.1%} refused"
                  if after.true_abstention is not None else "no unanswerable ones")
    write_settings(app.loremap_dir / CONFIG_FILE, {
        "search.tuning": tuning,
        "search.calibrated": (f"{day} on {source}: coverage {after.threshold:g}; "
                              f"{answerable} answerable questions, "
                              f"{after.false_abstention:.1%} refused; {unanswered}")})


def in_force(app: App) -> Finding:
    """doctor's line: the abstention threshold in force, and where it comes from."""
    from loremap.memory.doctor import Finding
    from loremap.search import SearchConfig

    try:
        coverage = SearchConfig.parse(app.settings.get_str("search.tuning")).coverage
    except InvalidInput as exc:
        return Finding("error", "abstention", f"search.tuning: {exc}")
    calibrated = app.settings.get_str("search.calibrated")
    if calibrated:
        where = f"calibrated {calibrated}"
    elif coverage != SearchConfig().coverage:
        where = "from search.tuning"
    else:
        where = ("the default; `loremap calibrate` fits it to this project's logged questions, "
                 "or to a dataset's with --dataset FILE")
    return Finding("ok", "abstention", f"coverage {coverage:g} ({where})")
