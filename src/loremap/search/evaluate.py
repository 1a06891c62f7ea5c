"""Score a retriever against a JSON Lines dataset of queries and their gold ids.

`loremap eval` and the benchmark scripts share this module. A dataset line is an object
`{"query": str, "terms": [str]?, "gold": [str]}`; unknown keys are ignored so a dataset can carry
notes for people. The dataset is parsed once, here, and any defect is an `InvalidInput` naming
the file and line. `score` runs the ranker once per case and keeps every per-query value, so two
reports over the same dataset can be compared query by query (`compare`).

Display convention, kept in the table and its differences alike: recall, all and nDCG are shown
as percentages with one decimal (differences in percentage points), MRR as a 0.xxx fraction.
JSON output always carries the raw fractions.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import NamedTuple, TypeAlias

from loremap.errors import InvalidInput
from loremap.search.metrics import (
    Estimate,
    all_at,
    bootstrap,
    min_detectable_effect,
    ndcg_at,
    paired_difference,
    recall_at,
    reciprocal_rank,
)

METRICS: tuple[str, ...] = ("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr")
KEEP_RANKED = 10

Json: TypeAlias = "str | int | float | bool | None | list[Json] | dict[str, Json]"
Metric: TypeAlias = Callable[[Sequence[str], Collection[str]], float]
Compared: TypeAlias = "tuple[str, Report, dict[str, Estimate]]"

_AT_K = re.compile(r"(ndcg|recall|all)@([1-9][0-9]{0,5})")
_AT_FUNCS = {"ndcg": ndcg_at, "recall": recall_at, "all": all_at}


class Case(NamedTuple):
    """One query of a dataset: its text, optional pre-analysed terms, the ids it should find."""

    query: str
    terms: tuple[str, ...]
    gold: tuple[str, ...]
    line: int


class Report(NamedTuple):
    """Per-query metric values of one run over a dataset, with their summaries."""

    n: int
    per_query: dict[str, list[float]]
    estimates: dict[str, Estimate]
    mde: dict[str, float]
    ranked: list[list[str]]
    seconds: float


# -- loading -----------------------------------------------------------------------------------


def load_dataset(path: Path, unanswerable: bool = False) -> list[Case]:
    """Parse a JSON Lines dataset into cases; InvalidInput names the file and line of a defect.
    With `unanswerable`, `"gold": []` is a question the memory cannot answer (`calibrate`)."""
    where = _one_line(str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{where}: cannot read the dataset: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{where}:{line}: not UTF-8 (byte {exc.start + 1})") from None
    cases: list[Case] = []
    # JSON Lines separates records by "\n" only; str.splitlines would also split on U+2028 and
    # other characters that JSON allows raw inside strings.
    for number, raw in enumerate(text.removeprefix("\ufeff").split("\n"), 1):
        if raw.strip():
            cases.append(_parse_case(raw, f"{where}:{number}", number, unanswerable))
    if not cases:
        raise InvalidInput(f"{where}: the dataset has no cases")
    return cases


def _parse_case(raw: str, where: str, number: int, unanswerable: bool = False) -> Case:
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        detail = (exc.msg if isinstance(exc, json.JSONDecodeError)
                  else "nested too deeply" if isinstance(exc, RecursionError) else str(exc))
        raise InvalidInput(f"{where}: not valid JSON ({_one_line(detail)})") from None
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: expected a JSON object, got {_kind(record)}")
    if "query" not in record:
        raise InvalidInput(f"{where}: 'query' is missing")
    query = record["query"]
    if not isinstance(query, str) or not query.strip():
        got = "a blank string" if isinstance(query, str) else _kind(query)
        raise InvalidInput(f"{where}: 'query' is {got}; expected a non-empty string")
    if "gold" not in record:
        raise InvalidInput(f"{where}: 'gold' is missing; list the ids this query should find")
    gold = _strings(record["gold"], "gold", where, blank_ok=False)
    if not gold and not unanswerable:
        raise InvalidInput(f"{where}: 'gold' is empty; list the ids this query should find")
    terms = _strings(record.get("terms", []), "terms", where, blank_ok=True)
    return Case(query, terms, tuple(dict.fromkeys(gold)), number)


def _strings(value: object, key: str, where: str, *, blank_ok: bool) -> tuple[str, ...]:
    wanted = "strings" if blank_ok else "non-empty strings"
    if not isinstance(value, list):
        raise InvalidInput(f"{where}: '{key}' must be a list of {wanted}, got {_kind(value)}")
    for index, item in enumerate(value, 1):
        if not isinstance(item, str) or not (blank_ok or item.strip()):
            got = "a blank string" if isinstance(item, str) else _kind(item)
            raise InvalidInput(f"{where}: '{key}' item {index} is {got}; expected {wanted}")
    return tuple(value)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


# -- scoring -----------------------------------------------------------------------------------


def metric(name: str) -> Metric:
    """The per-query function behind a metric name: `mrr`, `ndcg@K`, `recall@K` or `all@K`."""
    if name == "mrr":
        return reciprocal_rank
    match = _AT_K.fullmatch(name)
    if match is None:
        raise InvalidInput(f"unknown metric {name!r}; use mrr, ndcg@K, recall@K or all@K")
    at, k = _AT_FUNCS[match[1]], int(match[2])

    def at_k(ranked: Sequence[str], gold: Collection[str]) -> float:
        return at(ranked, gold, k)

    return at_k


def score(
    cases: Sequence[Case],
    rank: Callable[[Case], Sequence[str]],
    metrics: Sequence[str] = METRICS,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Rank every case once and compute each metric per query, with CIs and MDEs;
    `progress(done, total)` after each case (the CLI's bar on a terminal)."""
    if not cases:
        raise ValueError("cannot score an empty dataset")
    functions = {name: metric(name) for name in metrics}
    per_query: dict[str, list[float]] = {name: [] for name in functions}
    kept: list[list[str]] = []
    seconds = 0.0
    for done, case in enumerate(cases, start=1):
        start = time.perf_counter()
        ranked = list(rank(case))
        seconds += time.perf_counter() - start
        if progress is not None:
            progress(done, len(cases))
        for name, function in functions.items():
            per_query[name].append(function(ranked, case.gold))
        kept.append(list(dict.fromkeys(ranked))[:KEEP_RANKED])
    return Report(
        n=len(cases),
        per_query=per_query,
        estimates={name: bootstrap(values) for name, values in per_query.items()},
        mde={name: min_detectable_effect(values) for name, values in per_query.items()},
        ranked=kept,
        seconds=seconds,
    )


def compare(base: Report, other: Report) -> dict[str, Estimate]:
    """Paired bootstrap of other - base for each metric the two reports share."""
    if base.n != other.n:
        raise ValueError(f"reports cover different datasets: {base.n} and {other.n} cases")
    return {
        name: paired_difference(values, other.per_query[name])
        for name, values in base.per_query.items()
        if name in other.per_query
    }


# -- output ------------------------------------------------------------------------------------


def format_report(report: Report, label: str = "", compared: Compared | None = None) -> list[str]:
    """Plain-text table of a report: value, 95 % CI and MDE, and a paired comparison if given."""
    title = label or "results"
    header = ["metric", title, "95% CI", "MDE"]
    rows: list[list[str]] = []
    if compared is not None:
        other_label, other, diffs = compared
        title = f"{title} vs {other_label or 'other'}"
        header += [other_label or "other", "diff", "95% CI", ""]
    for name, estimate in report.estimates.items():
        row = [name, _value(name, estimate.mean), _interval(name, estimate), _mde(name, report)]
        if compared is not None:
            row += _compared_cells(name, other, diffs)
        rows.append(row)
    lines = [f"{title}: {report.n} queries, ranking took {report.seconds:.2f} s", ""]
    lines += _table([header, *rows])
    lines += ["", "recall, all and ndcg in % (differences in points), mrr as a fraction",
              f"MDE: smallest paired difference {report.n} queries would detect"
              " (alpha 0.05, power 0.8)"]
    if compared is not None:
        lines.append("diff is the paired mean of other - base; * marks a CI that excludes 0")
    return lines


def _compared_cells(name: str, other: Report, diffs: dict[str, Estimate]) -> list[str]:
    estimate = other.estimates.get(name)
    diff = diffs.get(name)
    value = "-" if estimate is None else _value(name, estimate.mean)
    if diff is None:
        return [value, "-", "-", ""]
    marker = "*" if diff.low > 0 or diff.high < 0 else ""
    return [value, _number(name, diff.mean, signed=True), _interval(name, diff, signed=True),
            marker]


def _is_fraction(name: str) -> bool:
    return name == "mrr"


def _number(name: str, value: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    if _is_fraction(name):
        return f"{value:{sign}.3f}"
    return f"{value * 100:{sign}.1f}"


def _value(name: str, value: float) -> str:
    return _number(name, value) if _is_fraction(name) else f"{_number(name, value)}%"


def _interval(name: str, estimate: Estimate, signed: bool = False) -> str:
    low, high = _number(name, estimate.low, signed), _number(name, estimate.high, signed)
    return f"[{low}, {high}]"


def _mde(name: str, report: Report) -> str:
    mde = report.mde.get(name, math.inf)
    return f"±{_number(name, mde)}" if math.isfinite(mde) else "n/a"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def report_json(
    report: Report, compared: Compared | None = None, label: str = ""
) -> dict[str, Json]:
    """The report as plain JSON types for `--json`; non-finite numbers become null."""
    out: dict[str, Json] = {
        "label": label,
        "n": report.n,
        "seconds": report.seconds,
        "metrics": _metrics_json(report),
        "per_query": {name: list(values) for name, values in report.per_query.items()},
        "ranked": [list(ids) for ids in report.ranked],
    }
    if compared is not None:
        other_label, other, diffs = compared
        out["compared"] = {
            "label": other_label,
            "n": other.n,
            "seconds": other.seconds,
            "metrics": _metrics_json(other),
            "difference": {
                name: {**_estimate_json(diff), "excludes_zero": diff.low > 0 or diff.high < 0}
                for name, diff in diffs.items()
            },
        }
    return out


def _metrics_json(report: Report) -> dict[str, Json]:
    return {
        name: {**_estimate_json(estimate), "mde": _finite(report.mde.get(name, math.inf))}
        for name, estimate in report.estimates.items()
    }


def _estimate_json(estimate: Estimate) -> dict[str, Json]:
    return {"mean": _finite(estimate.mean), "low": _finite(estimate.low),
            "high": _finite(estimate.high)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
