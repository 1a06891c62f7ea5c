"""A question's word naming the language of the code tells no file of that language apart
(search/language.py)."""

from __future__ import annotations

import json

import pytest

from conftest import new_project
from loremap.search.language import named, tokens
from loremap.text import Analyzer

# Four Python files; one spells "python" (it reports the interpreter), the one that answers
# the question never does.
FILES = {
    "src/lib/listing.py": '"""Lists."""\n\n\ndef drop_none(values):\n'
                          '    """Remove None values from a list."""\n'
                          "    return [v for v in values if v is not None]\n",
    "src/lib/compat.py": '"""Which Python runs us: Python 2 or Python 3."""\nimport sys\n\n\n'
                         "def python_version():\n    return sys.version\n\n\n"
                         "def values():\n    return list(sys.version_info)\n",
    "src/lib/money.py": '"""Prices in cents."""\n\n\ndef cents(amount):\n'
                        "    return round(amount * 100)\n",
    "src/lib/clock.py": '"""Time of day."""\n\n\ndef now():\n    return 0\n',
}


@pytest.fixture
def lib(tmp_path, monkeypatch, cli):
    root = new_project(tmp_path / "lib", FILES, "Lib", cli=cli, monkeypatch=monkeypatch)
    return root


def search(cli, *args):
    result = cli("search", *args, "--budget", "0", "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_the_language_s_name_does_not_pull_up_the_file_that_spells_it(lib, cli):
    found = search(cli, "python remove none values from a list", "--kind", "file")
    ids = [item["id"] for item in found["items"]]
    assert ids[0] == "src/lib/listing.py"
    # The word is not searched: no item is there because it matches "python".
    assert all("python" not in " ".join(item["why"]) for item in found["items"])
    # Without the word the ranking is the same: it told nothing apart.
    same = search(cli, "remove none values from a list", "--kind", "file")
    assert [item["id"] for item in same["items"]] == ids


def test_the_language_s_name_is_searched_where_its_files_are_few(lib, cli):
    """Among notes about many things, "python" is a word like any other."""
    for n, (title, body) in enumerate([
            ("Supported Python versions", "We support Python 3.11 and later only."),
            ("Release steps", "Tag, build the wheel, upload it."),
            ("Cents everywhere", "Prices are integers of cents."),
            ("Clock in UTC", "Every time is UTC."),
            ("Review rule", "Two approvals before a merge."),
            ("Branch names", "feature/, fix/ and chore/ prefixes."),
            ("Log format", "One JSON object a line."),
            ("Ports", "The app listens on 8080.")]):
        assert cli("remember", "-t", "decision", "--title", title, "-m", body).code == 0, n
    found = search(cli, "which python versions")
    assert found["items"][0]["id"] == "decision-supported-python-versions"


def test_a_question_of_only_the_language_s_name_is_not_answered(lib, cli):
    found = search(cli, "python")
    assert found["items"] == []


def test_names_are_read_as_the_analyzer_reads_them_and_counted_per_language():
    names = tokens(Analyzer(["en"]))
    assert names["python"] == ("python",) and names["py"] == ("python",)
    assert names["typescript"] == ("typescript", "tsx")
    assert "go" not in names  # a verb of every conversation: Go is "golang"
    assert all(token.isalpha() for token in names)  # no "3" from a "python3"
    files = {"python": 40, "typescript": 3, "tsx": 2}
    assert named({"python": 1, "typescript": 1, "golang": 1, "list": 1}, names, files) == {
        "python": 40, "typescript": 5}
