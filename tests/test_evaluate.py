"""Evaluation datasets are parsed strictly, scored per query and reported as plain text or JSON."""

from __future__ import annotations

import json
import math

import pytest

from loremap.errors import InvalidInput
from loremap.search.evaluate import (
    METRICS,
    Case,
    compare,
    format_report,
    load_dataset,
    metric,
    report_json,
    score,
)
from loremap.search.metrics import Estimate

GOOD = "\n".join([
    '{"query": "how do sessions expire", "gold": ["concept-sessions"]}',
    "",
    '{"query": "login", "terms": ["login"], "gold": ["src/auth/login.ts", "gotcha-jwt",'
    ' "gotcha-jwt"], "note": "unknown keys are ignored"}',
    "   ",
    '{"query": "café\\u2028menu", "terms": [], "gold": ["x"]}',
    "",
])


def write(tmp_path, content: str | bytes):
    path = tmp_path / "cases.jsonl"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


# -- loading -----------------------------------------------------------------------------------


def test_a_good_dataset_loads_every_case_with_its_line(tmp_path):
    cases = load_dataset(write(tmp_path, GOOD))
    assert cases == [
        Case("how do sessions expire", (), ("concept-sessions",), 1),
        Case("login", ("login",), ("src/auth/login.ts", "gotcha-jwt"), 3),
        Case("café\u2028menu", (), ("x",), 5),
    ]


def test_crlf_line_ends_and_a_byte_order_mark_are_accepted(tmp_path):
    content = '\ufeff{"query": "a", "gold": ["x"]}\r\n\r\n{"query": "b", "gold": ["y"]}\r\n'
    cases = load_dataset(write(tmp_path, content))
    assert [(case.query, case.line) for case in cases] == [("a", 1), ("b", 3)]


FIRST = '{"query": "fine", "gold": ["x"]}\n\n'


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{oops", "not valid JSON"),
        ('{"query": "a", "gold": ["x"]} trailing', "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deeply)"),
        ('{"query": "a", "gold": ["x"], "n": ' + "1" * 5000 + "}", "not valid JSON (Exceeds"),
        ('["query", "gold"]', "expected a JSON object, got a list"),
        ('"just text"', "expected a JSON object, got a string"),
        ('{"gold": ["x"]}', "'query' is missing"),
        ('{"query": "", "gold": ["x"]}', "'query' is a blank string"),
        ('{"query": "  ", "gold": ["x"]}', "'query' is a blank string"),
        ('{"query": 7, "gold": ["x"]}', "'query' is a number"),
        ('{"query": null, "gold": ["x"]}', "'query' is null"),
        ('{"query": "a"}', "'gold' is missing"),
        ('{"query": "a", "gold": "x"}', "'gold' must be a list of non-empty strings, got a string"),
        ('{"query": "a", "gold": null}', "'gold' must be a list"),
        ('{"query": "a", "gold": []}', "'gold' is empty"),
        ('{"query": "a", "gold": ["x", ""]}', "'gold' item 2 is a blank string"),
        ('{"query": "a", "gold": ["x", 3]}', "'gold' item 2 is a number"),
        ('{"query": "a", "gold": [["x"]]}', "'gold' item 1 is a list"),
        ('{"query": "a", "gold": ["x"], "terms": "a b"}', "'terms' must be a list of strings"),
        ('{"query": "a", "gold": ["x"], "terms": ["a", true]}', "'terms' item 2 is a boolean"),
    ],
)
def test_a_bad_line_is_refused_with_its_file_and_line_number(tmp_path, line, needle):
    path = write(tmp_path, FIRST + line + "\n" + FIRST)
    with pytest.raises(InvalidInput) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:3: ")
    assert needle in message


def test_bytes_that_are_not_utf8_are_refused_with_their_line(tmp_path):
    path = write(tmp_path, FIRST.encode() + b'{"query": "caf\xe9", "gold": ["x"]}\n')
    with pytest.raises(InvalidInput, match=r"cases\.jsonl:3: not UTF-8") as caught:
        load_dataset(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("content", ["", "\n", "  \n\n\t\n"])
def test_a_dataset_without_cases_is_refused(tmp_path, content):
    path = write(tmp_path, content)
    with pytest.raises(InvalidInput, match="no cases") as caught:
        load_dataset(path)
    assert str(path) in str(caught.value)


def test_a_missing_file_is_refused_with_its_path(tmp_path):
    path = tmp_path / "absent.jsonl"
    with pytest.raises(InvalidInput, match="cannot read") as caught:
        load_dataset(path)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match="cannot read"):
        load_dataset(tmp_path)


# -- scoring -----------------------------------------------------------------------------------


CASES = [Case(f"q{i}", (), (f"d{i}",), i + 1) for i in range(6)]


def first_half_right(case: Case) -> list[str]:
    """Puts the gold id first for q0..q2 and second-to-last of twelve for the rest."""
    number = int(case.query[1:])
    if number < 3:
        return [case.gold[0], "noise", "noise", "other"]
    return [f"n{j}" for j in range(10)] + [case.gold[0], "n99"]


def always_right(case: Case) -> list[str]:
    return [case.gold[0]]


def test_score_computes_every_metric_per_query_in_case_order():
    report = score(CASES, first_half_right)
    assert report.n == 6
    assert list(report.per_query) == list(METRICS)
    assert report.per_query["recall@1"] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert report.per_query["recall@10"] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert report.per_query["mrr"] == pytest.approx([1, 1, 1, 1 / 11, 1 / 11, 1 / 11])
    assert report.estimates["recall@1"].mean == 0.5
    assert report.estimates["mrr"].mean == pytest.approx((3 + 3 / 11) / 6)
    assert report.mde["recall@1"] == pytest.approx(2.801585 * math.sqrt(0.3) / math.sqrt(6),
                                                   rel=1e-5)
    assert report.seconds >= 0.0


def test_score_keeps_the_top_ten_distinct_ids_of_each_case():
    report = score(CASES, first_half_right)
    assert report.ranked[0] == ["d0", "noise", "other"]
    assert report.ranked[5] == [f"n{j}" for j in range(10)]


def test_score_ranks_each_case_exactly_once():
    seen: list[str] = []

    def counting(case: Case) -> list[str]:
        seen.append(case.query)
        return always_right(case)

    score(CASES, counting)
    assert seen == [case.query for case in CASES]


def test_score_accepts_other_metrics_in_the_order_given():
    report = score(CASES, first_half_right, metrics=("all@12", "recall@3"))
    assert list(report.estimates) == ["all@12", "recall@3"]
    assert report.estimates["all@12"] == Estimate(1.0, 1.0, 1.0)


@pytest.mark.parametrize("name", ["precision@5", "recall@0", "recall", "ndcg@", "MRR", "all@x"])
def test_an_unknown_metric_is_refused_before_any_ranking(name):
    def refuse(case: Case) -> list[str]:
        raise AssertionError("ranked before the metrics were checked")

    with pytest.raises(InvalidInput, match="unknown metric"):
        score(CASES, refuse, metrics=("mrr", name))


def test_metric_names_map_to_their_functions():
    assert metric("ndcg@2")(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    assert metric("all@1")(["a", "b"], {"a", "b"}) == 0.0
    assert metric("mrr")(["x", "a"], {"a"}) == 0.5


def test_an_empty_case_list_is_refused():
    with pytest.raises(ValueError, match="empty dataset"):
        score([], always_right)


def test_compare_gives_the_paired_difference_of_other_minus_base():
    base, other = score(CASES, first_half_right), score(CASES, always_right)
    diffs = compare(base, other)
    assert list(diffs) == list(METRICS)
    assert diffs["recall@1"].mean == 0.5
    assert diffs["recall@1"].low > 0
    assert compare(base, base)["ndcg@10"] == Estimate(0.0, 0.0, 0.0)


def test_compare_refuses_reports_over_different_datasets():
    with pytest.raises(ValueError, match="different datasets"):
        compare(score(CASES, always_right), score(CASES[:4], always_right))


# -- output ------------------------------------------------------------------------------------


def rows(lines: list[str]) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in lines
            if line.split() and line.split()[0] in METRICS}


def test_format_report_shows_value_interval_and_mde_per_metric():
    lines = format_report(score(CASES, always_right), label="bm25")
    assert lines[0].startswith("bm25: 6 queries")
    assert not any("\x1b" in line or "\n" in line for line in lines)
    table = rows(lines)
    assert list(table) == list(METRICS)
    assert table["recall@1"] == ["recall@1", "100.0%", "[100.0,", "100.0]", "±0.0"]
    assert table["mrr"] == ["mrr", "1.000", "[1.000,", "1.000]", "±0.000"]


def test_format_report_with_a_comparison_marks_a_difference_whose_ci_excludes_zero():
    base, other = score(CASES, first_half_right), score(CASES, always_right)
    lines = format_report(base, "bm25", ("hybrid", other, compare(base, other)))
    assert lines[0].startswith("bm25 vs hybrid: 6 queries")
    header = next(line for line in lines if line.startswith("metric"))
    assert header.split()[:5] == ["metric", "bm25", "95%", "CI", "MDE"]
    assert "hybrid" in header and "diff" in header
    table = rows(lines)
    assert table["recall@1"][1] == "50.0%"
    assert table["recall@1"][5:7] == ["100.0%", "+50.0"]
    assert table["recall@1"][-1] == "*"
    assert table["mrr"][5:7] == ["1.000", f"+{(1 - 1 / 11) / 2:.3f}"]


def test_format_report_leaves_an_unclear_difference_unmarked():
    report = score(CASES, first_half_right)
    lines = format_report(report, "a", ("b", report, compare(report, report)))
    assert rows(lines)["ndcg@10"][-2:] == ["[+0.0,", "+0.0]"]


def test_report_json_holds_only_plain_json_values():
    base, other = score(CASES, first_half_right), score(CASES, always_right)
    data = report_json(base, ("hybrid", other, compare(base, other)), label="bm25")
    round_trip = json.loads(json.dumps(data, allow_nan=False))
    assert round_trip == data
    assert data["n"] == 6 and data["label"] == "bm25"
    assert data["metrics"]["recall@1"]["mean"] == 0.5
    assert data["per_query"]["recall@1"] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert data["compared"]["difference"]["recall@1"]["excludes_zero"] is True
    assert data["compared"]["metrics"]["mrr"]["mean"] == 1.0


def test_report_json_turns_an_undefined_mde_into_null():
    data = report_json(score(CASES[:1], always_right))
    assert data["metrics"]["mrr"]["mde"] is None
    json.dumps(data, allow_nan=False)
    assert "compared" not in data
