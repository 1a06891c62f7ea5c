"""Tests, examples and docs weigh less unless the question speaks of them (`aside`)."""

from __future__ import annotations

import json

import pytest

from conftest import new_project
from loremap.errors import InvalidInput
from loremap.search import SearchConfig
from loremap.search.aside import kind as aside_kind

# A library whose one function is called, and so named, far more often by its tests, an
# example and the docs than by the module that defines it.
CALLS = "".join(f"    assert jsonify({n}) == jsonify({n})\n" for n in range(6))
FILES = {
    "src/web/json.py": '"""JSON answers."""\n\n\ndef jsonify(value):\n    return str(value)\n',
    "src/web/app.py": '"""The application."""\nfrom .json import jsonify\n\n\n'
                      "def index():\n    return jsonify({})\n",
    "tests/test_json.py": f"from web.json import jsonify\n\n\ndef test_jsonify():\n{CALLS}",
    "examples/hello/views.py": "from web.json import jsonify\n\n\ndef hello():\n"
                               + "".join(f"    jsonify('hello {n}')\n" for n in range(6)),
    "docs/conf.py": "# jsonify jsonify jsonify: the docs build\nproject = 'web jsonify'\n",
}


@pytest.fixture
def web(tmp_path, monkeypatch, cli):
    root = new_project(tmp_path / "web", FILES, "Web", cli=cli, monkeypatch=monkeypatch)
    return root


def ranked(cli, *args):
    result = cli("search", *args, "--kind", "file", "--budget", "0", "--json")
    assert result.code == 0, result.err
    return [item["id"] for item in json.loads(result.out)["items"]]


def test_the_module_that_defines_a_name_comes_before_its_tests_and_examples(web, cli):
    found = ranked(cli, "jsonify")
    assert found[0] == "src/web/json.py"
    assert found.index("src/web/app.py") < min(found.index(p) for p in (
        "tests/test_json.py", "examples/hello/views.py", "docs/conf.py"))
    # Without the prior the files that repeat the name most come first.
    before = ranked(cli, "jsonify", "--tuning", "aside=1")
    assert before.index("src/web/app.py") > before.index("tests/test_json.py")


def test_a_question_about_tests_keeps_the_tests_where_they_rank(web, cli):
    with_prior = ranked(cli, "the tests of jsonify")
    without = ranked(cli, "the tests of jsonify", "--tuning", "aside=1")
    assert with_prior[0] == without[0] == "tests/test_json.py"
    # Examples and docs still weigh less: the question is about tests only.
    assert with_prior.index("docs/conf.py") > without.index("docs/conf.py")


@pytest.mark.parametrize(("path", "kind"), [
    ("tests/test_x.py", "test"), ("src/pkg/tests/helpers.py", "test"),
    ("test_requests.py", "test"), ("pkg/conftest.py", "test"), ("pkg/cart_test.py", "test"),
    ("sphinx/testing/util.py", "test"), ("examples/app.py", "example"),
    ("docs/conf.py", "docs"), ("src/flask/app.py", None), ("_pytest/python.py", None),
    ("src/contest.py", None), ("pylint/testutils/checker.py", None),
])
def test_which_files_are_aside(path, kind):
    assert aside_kind(path) == kind


def test_a_bad_aside_value_is_refused():
    with pytest.raises(InvalidInput, match="aside"):
        SearchConfig.parse("aside=much")
