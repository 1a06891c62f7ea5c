"""A pasted issue is read as its parts: title, prose, code, output, noise (search/issue.py)."""

from __future__ import annotations

import pytest

from loremap.errors import InvalidInput
from loremap.model.search import SymbolRow
from loremap.search import SearchConfig, entities, issue
from test_search import search, shop  # noqa: F401  (the fixture, on SQLite and PostgreSQL)

REPORT = '''Coupon applied twice at checkout
<!-- Thanks for filing! Please fill in the template below. -->
### Describe the bug
Checking out a cart applies the `apply_coupon` discount twice, see
https://github.com/acme/shop/issues/4242 and commit 3f9a2c71d0e4.

```python
>>> cart = Cart()
>>> cart.checkout()
```

```
Traceback (most recent call last):
  File "/home/me/code/shop/src/shop/cart.py", line 12, in checkout
  File "/home/me/code/shop/src/shop/pricing.py", line 5, in total
ValueError: negative total
```

### Environment
- OS: Ubuntu 22.04
- Python version: 3.11.7
pytest==8.1.0

### Additional context
_No response_
'''


def kinds(text):
    """Each kind's text, its parts joined."""
    out: dict[str, str] = {}
    for part in issue.read(text):
        out[part.kind] = out[part.kind] + "\n" + part.text if part.kind in out else part.text
    return out


def test_an_issue_is_read_as_its_title_prose_code_output_and_noise():
    parts = issue.read(REPORT)
    assert [p.kind for p in parts] == ["title", "noise", "prose", "code", "output", "noise"]
    by_kind = kinds(REPORT)
    assert by_kind["title"] == "Coupon applied twice at checkout"
    # Template headings, the HTML comment, the environment report: noise.
    assert "Describe the bug" in by_kind["noise"] and "Ubuntu" in by_kind["noise"]
    assert "Thanks for filing" in by_kind["noise"] and "_No response_" in by_kind["noise"]
    # Links, hashes and numbers never name anything in a project.
    assert "github" not in by_kind["prose"] and "3f9a2c71d0e4" not in by_kind["prose"]
    assert "apply_coupon" in by_kind["prose"]
    assert by_kind["code"].split() == ["cart", "=", "Cart()", "cart.checkout()"]  # no prompts
    assert "ValueError: negative total" in by_kind["output"]
    assert "line" in by_kind["output"] and "12" not in by_kind["output"]


@pytest.mark.parametrize("line", [
    "- Python version: 3.8.2", "OS: Ubuntu 18.04", "pytest==5.2.2", "attrs      19.3.0",
    "platform linux -- Python 3.7.3, pytest-5.2.2, py-1.8.0, pluggy-0.13.0",
    "====================== 1 passed in 0.01s ======================",
    ">>>>>>>>>>>>>>>>>> PDB post_mortem (IO-capturing turned off) >>>>>>>>>>>>>>>>>>",
])
def test_version_reports_and_banners_are_noise(line):
    assert [p.kind for p in issue.read(f"Title\n\n{line}\n\nthe end")] == [
        "title", "noise", "prose"]


def test_prose_that_mentions_a_version_stays_prose():
    assert kinds("Title\nsome prose\nOlder versions like 2.4.3 look ok to me.")["prose"] \
        == "some prose\nOlder versions like   look ok to me."


def test_fenced_blocks_are_code_or_output_by_their_tag_or_their_content():
    assert "code" in kinds("T\nx\n```rst\n.. autoclass:: A\n```")
    assert "output" in kinds("T\nx\n```console\n$ make html\n```")
    assert "output" in kinds("T\nx\n```\nerror: no such file\n```")
    assert "code" in kinds("T\nx\n```\ndef f():\n    pass\n```")
    # A fence never closed runs to the end of the text; an indented block is code.
    assert kinds("T\nx\n```python\nimport os")["code"] == "import os"
    assert kinds("T\nsee:\n\n    f(1)\n")["code"] == "    f( )"


def test_a_question_of_one_or_two_lines_is_not_an_issue():
    assert not issue.looks_like_issue("why is the coupon applied twice")
    assert not issue.looks_like_issue("why is the coupon\napplied twice")
    assert issue.looks_like_issue(REPORT)


def test_traceback_frames_come_deepest_first_each_once():
    log = ('Traceback (most recent call last):\n'
           '  File "/x/src/shop/cart.py", line 12, in checkout\n'
           '  File "/x/src/shop/pricing.py", line 5, in total\n'
           '  File "/x/src/shop/cart.py", line 30, in add\n'
           'src/shop/discount.py:7: in apply_coupon\n')
    assert issue.frames(log) == ["src/shop/discount.py", "/x/src/shop/cart.py",
                                 "/x/src/shop/pricing.py"]


def test_ipython_frames_are_frames_too():
    log = ("LinAlgError                  Traceback (most recent call last)\n"
           "File ~/code/sb/seaborn/_core/plot.py:265, in Plot._repr_png_(self)\n"
           "~/code/sb/seaborn/axisgrid.py in map(self, func, *args)\n"
           "File ~/code/sb/seaborn/_stats/regression.py:30, in PolyFit._fit_predict(self)\n")
    assert issue.frames(log) == ["~/code/sb/seaborn/_stats/regression.py",
                                 "~/code/sb/seaborn/axisgrid.py",
                                 "~/code/sb/seaborn/_core/plot.py"]
    assert issue.functions(log)[:3] == ["_fit_predict", "PolyFit", "map"]


def test_a_traceback_names_its_functions_deepest_first():
    log = ('Traceback (most recent call last):\n'
           '  File "x/main.py", line 3, in <module>\n'
           '  File "x/render.py", line 12, in unparse\n'
           'src/shop/discount.py:7: in apply_coupon\n')
    assert issue.functions(log) == ["apply_coupon", "unparse"]


def test_a_frame_whose_path_holds_versions_is_output_not_noise():
    frame = ('  File "/usr/lib/python3.9/site-packages/x-1.2.3/shop/cart.py", line 8, '
             "in checkout")
    assert "output" in kinds(f"Title\n\nTraceback (most recent call last):\n{frame}\n")


class Names:
    def files_named(self, names):
        known = {"cart.py": ["src/shop/cart.py"], "pricing.py": ["src/shop/pricing.py"],
                 "__init__.py": ["src/shop/__init__.py", "src/web/__init__.py"]}
        return {n: known[n] for n in names if n in known}

    def symbols_named(self, names, max_definers):
        return [SymbolRow(n, "src/shop/render.py", "function", 3) for n in names
                if n == "unparse"]

    def existing_ids(self, ids):
        return set()


def test_a_traceback_function_is_a_symbol_whatever_it_looks_like():
    assert entities.symbols(Names(), "it fails in unparse", 5) == []  # a plain word
    hits = entities.symbols(Names(), "it fails in unparse", 5, ["unparse"])
    assert [h.id for h in hits] == ["src/shop/render.py"]


def test_the_deepest_frame_of_the_project_is_the_strongest_entity():
    hits = entities.frames(Names(), ["/usr/lib/python3.11/json/decoder.py",
                                     "/x/src/shop/pricing.py", "/x/src/shop/cart.py"])
    assert [h.id for h in hits] == ["src/shop/pricing.py", "src/shop/cart.py"]
    assert hits[0].strength > hits[1].strength
    assert hits[0].why == "where the traceback ends"


def test_a_bare_init_file_names_no_package():
    assert entities.paths(Names(), "an empty `__init__.py` in the folder") == []
    assert [h.id for h in entities.paths(Names(), "see shop/__init__.py")] == [
        "src/shop/__init__.py"]


def test_issue_weights_are_checked():
    assert SearchConfig.parse("issue=3:2:1:0").issue == (3.0, 2.0, 1.0, 0.0)
    assert SearchConfig.parse("issue=3:2:1:0").describe() == "issue=3:2:1:0"
    for bad in ("issue=1:2", "issue=1:1:1:-1", "issue=a:b:c:d"):
        with pytest.raises(InvalidInput, match="issue"):
            SearchConfig.parse(bad)


def test_a_pasted_issue_finds_where_its_traceback_ends(shop, cli):  # noqa: F811
    found = search(cli, REPORT, "--kind", "file")
    first = found["items"][0]
    assert first["id"] == "src/shop/pricing.py"
    assert "where the traceback ends" in first["why"]
    assert [i["id"] for i in found["items"]].index("src/shop/cart.py") > 0
    # The title's words are searched; the noise's never are.
    assert {"coupon", "checkout"} <= set(found["terms"])
    assert not {"ubuntu", "describ", "bug", "github", "respons"} & set(found["terms"])


def test_bad_issue_weights_are_one_line_errors(shop, cli):  # noqa: F811
    result = cli("search", REPORT, "--tuning", "issue=1:2")
    assert result.code == 1 and "issue" in result.err and len(result.err.splitlines()) == 1


@pytest.mark.parametrize("text", [
    "a" + " " * 50_000 + "b: 1.2", "# a" + " " * 50_000 + "b", "<a" * 50_000,
    "- a b c d: 1.2.3 x y\n" * 20_000, "<!--\n" * 20_000, "```\n" + "x = 1\n" * 20_000,
])
def test_a_pathological_paste_is_read_in_one_pass(text):
    # Each of these once took seconds to minutes (a backtracking pattern, a quadratic join).
    parts = issue.read("Title\n\n" + text)
    assert parts[0] == issue.Part("title", "Title")
    assert sum(len(p.text) for p in parts) <= len(text) + 100


def test_a_file_many_frames_pass_through_does_not_outrank_where_they_end(shop):  # noqa: F811
    from loremap.app import App

    log = ("Checkout fails with a negative total\n\nTraceback (most recent call last):\n"
           '  File "/srv/shop/src/shop/cart.py", line 3, in __init__\n'
           '  File "/srv/shop/src/shop/cart.py", line 6, in add\n'
           '  File "/srv/shop/src/shop/cart.py", line 9, in checkout\n'
           '  File "/srv/shop/src/shop/pricing.py", line 5, in total\n'
           "ValueError: negative total\n")
    with App.open() as app:
        engine = app.engine()
        engine = getattr(engine, "project", engine)  # the project's engine of a federation
        hits, symbols = engine._entities(log, [], issue.frames(log), issue.functions(log))
    # cart.py defines three of the frames' functions, pricing.py one: depth decides.
    assert [h.id for h in hits] == ["src/shop/pricing.py", "src/shop/cart.py"]
    assert {s.name for s in symbols["src/shop/cart.py"]} == {"__init__", "add", "checkout"}
