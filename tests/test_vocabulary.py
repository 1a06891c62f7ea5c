"""One vocabulary per concept, and typed boundaries that a renamed key cannot slip through.

Note types, statuses, sources, kinds and relations are the model's enums; the CLI's choices and
the MCP schemas are tied to them here. The MCP tools' typed argument records have exactly their
schema's properties. The prompt hook and the engine read one list of conversational replies.
"""

from __future__ import annotations

import pytest

from loremap import actor
from loremap.cli import parser
from loremap.mcp import catalogue
from loremap.mcp.args import FACT_FIELDS, PARSERS, RECORDS
from loremap.model import NodeKind, NoteType, Relation, Source, Status
from loremap.search import Engine, Request
from loremap.store.sqlite import SqliteStore
from loremap.text import Analyzer
from loremap.text.chatter import CHATTER_WORDS, is_chatter


def test_the_cli_choices_are_the_model_enums():
    assert parser.NOTE_TYPES == tuple(t.value for t in NoteType)
    assert parser.STATUSES == tuple(s.value for s in Status)
    assert set(parser.SOURCES) == {s.value for s in Source}
    assert parser.KINDS == tuple(k.value for k in NodeKind)
    assert parser.ROLES == actor.ROLES


def test_the_mcp_schemas_use_the_model_enums():
    recall = next(t for t in catalogue.TOOLS if t.name == "recall").schema["properties"]
    assert recall["kind"]["enum"] == [k.value for k in NodeKind]
    assert recall["types"]["items"]["enum"] == [t.value for t in NoteType]
    fact = catalogue._FACT["properties"]
    assert fact["type"]["enum"] == [t.value for t in NoteType]
    relations = fact["links"]["items"]["properties"]["rel"]["enum"]
    assert set(relations) == {r.value for r in Relation} - {"supersedes"}


@pytest.mark.parametrize("spec", catalogue.TOOLS, ids=lambda t: t.name)
def test_each_tool_record_has_exactly_the_schema_properties(spec):
    assert spec.name in PARSERS, f"no typed arguments for {spec.name}"
    assert set(RECORDS[spec.name]._fields) == set(spec.schema["properties"])


def test_a_fact_draft_reads_every_fact_property():
    assert set(FACT_FIELDS) == set(catalogue._FACT["properties"])
    draft = PARSERS["remember"]({"facts": [{
        "type": "bug", "title": "t", "body": "b", "files": ["a.py"],
        "links": [{"rel": "about", "target": "concept-x"}], "supersedes": "bug-old",
        "tags": ["x"]}]}).facts[0]  # type: ignore[union-attr]
    assert (draft.type, draft.title, draft.body, tuple(draft.files), tuple(draft.links),
            draft.supersedes, tuple(draft.tags)) == (
        "bug", "t", "b", ("a.py",), (("about", "concept-x"),), "bug-old", ("x",))


@pytest.mark.parametrize("reply", ["yes", "OK, go on!", "thanks", "hi", "hello", "wait",
                                   "retry", "looks good", "Sounds good, continue."])
def test_a_conversational_reply_is_chatter_to_the_hook_and_the_engine(tmp_path, reply):
    assert is_chatter(reply)
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer(["en"]))
    try:
        found = Engine(store, Analyzer(["en"])).recall(Request(reply))
    finally:
        store.close()
    assert found.abstained and found.terms == ()


@pytest.mark.parametrize("question", ["how do we retry a failed upload",
                                      "where is hello_world defined"])
def test_a_question_with_a_subject_is_not_chatter(question):
    assert not is_chatter(question)


def test_the_chatter_list_is_lowercase_words():
    assert all(w == w.lower() and w.isalpha() for w in CHATTER_WORDS)
