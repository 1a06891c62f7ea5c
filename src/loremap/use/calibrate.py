"""`loremap calibrate --dataset FILE`: the abstention threshold fitted to this project.

Recall answers "nothing relevant in memory" when none of its best text matches holds
`coverage` (0.3) of the question's IDF mass (and no named entity or close vector answers it:
search/engine.py `Signal`). How much of a question a relevant note holds depends on the
project: notes written as conversation turns hold less of a question than functions do. The
dataset lists questions the memory can answer (`"gold": [ids]`) and questions it cannot
(`"gold": []`), in `loremap eval`'s JSON Lines; each is asked once, and the threshold is the
largest that keeps false abstention (an answerable question refused) at most `MAX_FALSE`
(3 %), which makes true abstention (an unanswerable one refused) as high as that allows.
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
    true_abstention: float  # unanswerable questions refused
    true_interval: tuple[float, float]


class Calibration(NamedTuple):
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


def calibrate(app: App, dataset: Path, freshness: Freshness, apply: bool = False
              ) -> Calibration:
    from loremap.search import Request
    from loremap.search.evaluate import load_dataset

    cases = load_dataset(dataset, unanswerable=True)
    answerable = [c for c in cases if c.gold]
    unanswerable = [c for c in cases if not c.gold]
    if len(answerable) < MIN_QUESTIONS or len(unanswerable) < MIN_QUESTIONS:
        raise InvalidInput(
            f"{dataset}: calibrating needs at least {MIN_QUESTIONS} answerable questions "
            f"(\"gold\": [ids]) and {MIN_QUESTIONS} unanswerable ones (\"gold\": []); it has "
            f"{len(answerable)} and {len(unanswerable)}")
    warnings = refresh(app, freshness)
    engine = app.engine()
    signals = {id(c): engine.abstention(Request(c.query, terms=list(c.terms))) for c in cases}
    yes = [signals[id(c)] for c in answerable]
    no = [signals[id(c)] for c in unanswerable]
    before = rates(yes, no, engine.config.coverage)
    after = fit(yes, no)
    if apply:
        _persist(app, after, dataset, len(yes), len(no))
    return Calibration(len(yes), len(no), before, after, apply, warnings)


def _persist(app: App, after: Rates, dataset: Path, answerable: int, unanswerable: int
             ) -> None:
    from loremap.config import CONFIG_FILE
    from loremap.search import SearchConfig
    from loremap.use.settings import write_setting

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
    config = app.loremap_dir / CONFIG_FILE
    write_setting(config, "search.tuning", tuning)
    day = dt.datetime.now(dt.UTC).date().isoformat()
    write_setting(config, "search.calibrated", (
        f"{day} on {dataset.name}: coverage {after.threshold:g}; {answerable} answerable "
        f"questions, {after.false_abstention:.1%} refused; {unanswerable} unanswerable, "
        f"{after.true_abstention:.1%} refused"))


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
        where = ("the default; `loremap calibrate --dataset FILE` fits it to this project's "
                 "questions")
    return Finding("ok", "abstention", f"coverage {coverage:g} ({where})")
