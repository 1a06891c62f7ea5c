"""Parsing source files into FileFacts: golden fixtures per language, and bytes that never raise.

Regenerate the golden files with `pytest tests/test_parse.py --update-golden`, then read the
diff: they are never edited by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loremap.codemap.facts import Definition, FileFacts
from loremap.codemap.languages import LANGUAGES, language_for
from loremap.codemap.parse import language_tools, parse_source

FIXTURES = Path(__file__).parent / "fixtures" / "codemap"
TREE_SITTER = sorted(name for name, lang in LANGUAGES.items() if lang.grammar is not None)


def facts_as_json(facts: FileFacts) -> dict[str, object]:
    return {
        "language": facts.language,
        "docstring": facts.docstring,
        "definitions": [list(definition) for definition in facts.definitions],
        "references": list(facts.references),
        "imports": list(facts.imports),
        "syntax_errors": facts.syntax_errors,
    }


def parse_fixture(language: str) -> dict[str, dict[str, object]]:
    root = FIXTURES / language
    parsed = {}
    for file in sorted(root.rglob("*")):
        path = file.relative_to(root).as_posix()
        file_language = language_for(path)
        if file.is_file() and file_language is not None:
            parsed[path] = facts_as_json(parse_source(path, file_language, file.read_bytes()))
    return parsed


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_each_fixture_file_parses_to_its_golden_facts(language: str, golden) -> None:
    parsed = parse_fixture(language)
    golden.check_json(FIXTURES / f"{language}.golden.json", parsed)
    assert any(facts["language"] == language for facts in parsed.values())
    assert not any(facts["syntax_errors"] for facts in parsed.values())


@pytest.mark.parametrize(("language", "source", "imports"), [
    ("python", "from . import a, b as c\nfrom .. import d\nfrom .m import n\nimport x.y as z\n"
               "from __future__ import annotations\n", (".a", ".b", "..d", ".m", "x.y")),
    ("javascript", "import a from './a';\nexport * from \"./b\";\nrequire('./c');\n"
                   "import('./d');\nrequire(`./e${x}`);\n", ("./a", "./b", "./c", "./d")),
    ("typescript", "import type { T } from './t';\nimport fs = require('fs');\n", ("./t", "fs")),
    ("go", 'import (\n\tstr "strings"\n\t_ "embed"\n)\n', ("strings", "embed")),
    ("rust", "use crate::a::{b, c::{self, D as E}, f::*};\nmod g;\nmod h { }\n",
     ("crate::a::b", "crate::a::c", "crate::a::c::D", "crate::a::f::*", "mod g")),
    ("java", "import static a.b.C.m;\nimport a.b.*;\n", ("a.b.C.m", "a.b.*")),
    ("kotlin", "import a.b.C as D\nimport a.b.*\n", ("a.b.C", "a.b.*")),
    ("c", '#include "x.h"\n#include <stdio.h>\n', ("x.h", "<stdio.h>")),
    ("csharp", "using static A.B;\nusing C = D.E;\nglobal using F;\n", ("A.B", "D.E", "F")),
    ("ruby", "require 'x'\nrequire_relative 'y'\nrequire_relative '../z'\nrequire \"#{d}/w\"\n",
     ("x", "./y", "../z")),
    ("php", "<?php\nuse \\A\\B;\nuse C\\{D, E as F};\nrequire __DIR__ . '/g.php';\n"
            "include_once('h.php');\nrequire $dynamic;\n",
     ("A\\B", "C\\D", "C\\E", "./g.php", "h.php")),
    ("dart", "import 'package:x/y.dart';\nexport 'a.dart';\npart 'b.dart';\n",
     ("package:x/y.dart", "a.dart", "b.dart")),
    ("swift", "import Foundation\n@testable import App\n", ("Foundation", "App")),
    ("scala", "import a.b.c\nimport a.{D, E}\nimport f._\n", ("a.b.c", "a.D", "a.E", "f._")),
    ("scss", "@use 'sass:math';\n@import 'a', 'b';\n@forward \"c\";\n",
     ("sass:math", "a", "b", "c")),
    ("shell", 'source ./a.sh\n. "$(dirname "$0")/b.sh"\n', ("./a.sh", "./b.sh")),
])
def test_import_specifiers_are_encoded_as_the_resolver_expects(
        language: str, source: str, imports: tuple[str, ...]) -> None:
    assert parse_source("f", language, source.encode()).imports == imports


def test_a_syntax_error_keeps_the_definitions_that_parsed() -> None:
    python = parse_source("m.py", "python",
                          b"import os\n\ndef ok():\n    pass\n\ndef broken(:\n\nclass Later:\n"
                          b"    def method(self):\n        ok()\n")
    assert python.syntax_errors
    assert python.imports == ("os",)
    assert {"ok", "Later"} <= {definition.name for definition in python.definitions}

    go = parse_source("m.go", "go", b"package m\n\nfunc Good() {}\n\nfunc Bad( {\n")
    assert go.syntax_errors
    assert Definition("Good", "function", 3) in go.definitions


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_undecodable_bytes_are_replaced_not_raised(language: str) -> None:
    data = b"# \xff\xfe caf\xe9\nimport \xc3(\n\x00class \xe9t\xe9 {}\n" * 3
    facts = parse_source("bad", language, data)
    assert facts.language == language
    assert all(isinstance(name, str) for name in facts.references)


@settings(max_examples=60, derandomize=True, database=None)
@given(st.sampled_from(sorted(LANGUAGES)), st.binary(max_size=300))
def test_random_bytes_never_raise(language: str, data: bytes) -> None:
    facts = parse_source("random", language, data)
    assert len(facts.docstring) <= 300


@pytest.mark.parametrize(("language", "source"), [
    ("python", "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# Copyright 2024 Acme\n"
               "# Licensed under MIT.\n\n# Tools for widgets.\nimport os\n"),
    ("go", "// Copyright 2024 Acme. All rights reserved.\n\n//go:build linux\n\n"
           "// Tools for widgets.\npackage w\n"),
    ("java", "/*\n * Copyright 2024 Acme\n *\n * Licensed under Apache 2.0.\n */\n"
             "/** Tools for widgets. */\npackage w;\n"),
    ("c", "/* SPDX-License-Identifier: MIT */\n/*\n * Tools for widgets.\n *\n * More.\n */\n"),
    ("ruby", "# frozen_string_literal: true\n# License: MIT\n\n# Tools for widgets.\nmodule W\n"
             "end\n"),
    ("php", "<?php\n// SPDX-License-Identifier: MIT\n\n// Tools for widgets.\n"),
    ("shell", "#!/bin/sh\n# Copyright Acme\n\n# Tools for widgets.\nset -e\n"),
])
def test_a_licence_header_is_skipped_for_the_docstring(language: str, source: str) -> None:
    assert parse_source("f", language, source.encode()).docstring == "Tools for widgets."


def test_a_licence_header_without_a_following_comment_gives_no_docstring() -> None:
    source = b"// Copyright 2024 Acme\n// All rights reserved.\n\npackage w\n\n// Later.\n"
    assert parse_source("w.go", "go", source).docstring == ""


def test_the_python_module_docstring_wins_over_comments_and_keeps_its_first_paragraph() -> None:
    source = b'# A comment.\n"""Widgets   and\n   gadgets.\n\nDetails."""\n'
    assert parse_source("w.py", "python", source).docstring == "Widgets and gadgets."


def test_the_docstring_is_capped_at_300_characters() -> None:
    source = ('"""' + "word " * 200 + '"""\n').encode()
    docstring = parse_source("w.py", "python", source).docstring
    assert len(docstring) == 300
    assert docstring.startswith("word word")


@pytest.mark.parametrize("language", TREE_SITTER)
def test_the_parser_and_query_of_a_language_are_made_once(language: str) -> None:
    first = language_tools(language)
    parse_source("a", language, b"x")
    parse_source("b", language, b"y")
    again = language_tools(language)
    assert again.parser is first.parser
    assert again.query is first.query


def test_every_fixture_language_matches_its_folder() -> None:
    for language in LANGUAGES:
        files = [path for path in (FIXTURES / language).rglob("*") if path.is_file()]
        assert files, f"no fixture for {language}"
        assert language in {language_for(path.name) for path in files}
