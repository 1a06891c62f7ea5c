"""Parse one source file into its FileFacts: tree-sitter tag queries, or regexes without a grammar.

The only module that imports `tree_sitter`. Grammar wheels load lazily through importlib the first
time a language is met; the parser and the compiled query of each language are made once per
process and kept in `_TOOLS`. The tag queries are package data (`queries/<name>.scm`) with the
captures `@name.definition.<kind>`, `@name.reference.<kind>` and `@import[.variant]`. Languages
without a grammar are read by `fallback`; both take a file's summary from `docstrings`.

Import specifiers handed to the resolver, exactly (duplicates dropped, source order kept):

- python: `import a.b` -> `a.b`; `from .m import n` -> `.m`; `from ..m.k import n` -> `..m.k`;
  `from . import y, z` -> `.y`, `.z`; `from .. import z` -> `..z`; `from . import *` -> `.`;
  `from __future__ import ...` is not an import.
- javascript, typescript, tsx: the string literal as written, for `import ... from`, bare
  `import '...'`, `export ... from`, `require('...')`, `import('...')` and TS
  `import x = require('...')` (only literal strings; templates and expressions are skipped).
- go: the import path (`fmt`, `github.com/x/y`).
- rust: `use` trees are expanded to full paths: `use crate::a::{b, c as d};` -> `crate::a::b`,
  `crate::a::c`; `{self}` -> the parent path; globs keep `::*`. `mod foo;` (no body) ->
  `mod foo`, so the resolver can tell a file declaration from a path use. `extern crate x;` -> `x`.
- java, kotlin: the dotted path (`a.b.C`); wildcards keep `.*`; `import static a.b.C.m;` ->
  `a.b.C.m` (the `static` keyword and Kotlin `as` aliases are dropped).
- c, cpp: `#include "x.h"` -> `x.h`; `#include <vector>` -> `<vector>` (brackets kept: a system
  include).
- csharp: the namespace or type of `using`, `using static`, `global using` and `using A = B.C;`
  (-> `B.C`).
- ruby: `require 'x'` -> `x`; `require_relative 'y'` -> `./y` (`../z` stays `../z`).
- php: `use A\\B\\C;` -> `A\\B\\C` (no leading backslash; group uses expanded: `use A\\{B, C};`
  -> `A\\B`, `A\\C`); `require`/`include` (`_once`) of a literal -> `x.php`; of
  `__DIR__ . '/x.php'` -> `./x.php`.
- dart: the URI as written (`package:x/y.dart`, `a.dart`) for `import`, `export` and `part`.
- swift: the module (`Foundation`, `Swift.Array` for `import struct Swift.Array`).
- scala: the dotted path (`a.b.c`, wildcards `a.b._` / `a.b.*`); selector lists expanded:
  `a.b.{C, D => E}` -> `a.b.C`, `a.b.D`.
- css, scss, less: each URL of `@import`, `@use`, `@forward` (`url(x.css)` -> `x.css`).
- shell: the path of `source x` / `. x`, quotes removed; a leading `$(dirname "$0")` or
  `${BASH_SOURCE%/*}` becomes `.` (`./lib/env.sh`); other variables stay as written.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from importlib import resources
from typing import NamedTuple

from tree_sitter import Language as Grammar
from tree_sitter import Node, Parser, Query, QueryCursor

from loremap.codemap.docstrings import LICENSE_HEADER, comment_docstring, first_paragraph
from loremap.codemap.facts import Definition, FileFacts
from loremap.codemap.fallback import parse_with_regex, unquote
from loremap.codemap.languages import LANGUAGES

# When one name is captured under several kinds, the first kind in this order wins.
_KIND_ORDER = ("method", "interface", "trait", "struct", "enum", "class", "module", "type",
               "function", "constant", "variable")
_KIND_RANK = {kind: rank for rank, kind in enumerate(_KIND_ORDER)}
# A language whose query is several files (the TypeScript grammars extend the JavaScript one).
_QUERY_FILES = {
    "javascript": ("ecmascript", "javascript", "jsx"),
    "typescript": ("ecmascript", "typescript"),
    "tsx": ("ecmascript", "typescript", "jsx"),
}
_STRING_NODES = frozenset({"string", "string_literal", "interpreted_string_literal",
                           "raw_string_literal", "encapsed_string", "string_content",
                           "string_fragment"})
_GENERIC_ARGS = re.compile(r"<.*>$")


class LanguageTools(NamedTuple):
    """A language's parser and compiled tag query, made once per process."""

    parser: Parser
    query: Query


_TOOLS: dict[str, LanguageTools] = {}


def language_tools(language: str) -> LanguageTools:
    """The cached parser and query of a tree-sitter language (KeyError/ValueError if none)."""
    tools = _TOOLS.get(language)
    if tools is None:
        grammar_ref = LANGUAGES[language].grammar
        if grammar_ref is None:
            raise ValueError(f"{language} has no tree-sitter grammar")
        module, function = grammar_ref
        grammar = Grammar(getattr(importlib.import_module(module), function)())
        folder = resources.files("loremap.codemap") / "queries"
        source = "\n".join((folder / f"{name}.scm").read_text(encoding="utf-8")
                           for name in _QUERY_FILES.get(language, (language,)))
        tools = LanguageTools(Parser(grammar), Query(grammar, source))
        _TOOLS[language] = tools
    return tools


def parse_source(path: str, language: str, data: bytes) -> FileFacts:
    """The facts of one file. Never raises on the content: undecodable bytes are replaced, a
    syntax error keeps what parsed and sets `syntax_errors`."""
    if LANGUAGES[language].grammar is None:
        return parse_with_regex(path, language, data)
    tools = language_tools(language)
    tree = tools.parser.parse(data)
    root = tree.root_node
    captures = QueryCursor(tools.query).captures(root)
    docstring = _python_docstring(root) if language == "python" else ""
    return FileFacts(
        path=path,
        language=language,
        docstring=docstring or comment_docstring(language, data),
        definitions=_definitions(captures),
        references=_distinct_names(
            node for name, nodes in captures.items() if name.startswith("name.reference.")
            for node in nodes),
        imports=_imports(captures),
        syntax_errors=root.has_error,
    )


# ---------------------------------------------------------------- tree-sitter captures

def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _definitions(captures: dict[str, list[Node]]) -> tuple[Definition, ...]:
    best: dict[tuple[int, int], tuple[int, str, Node]] = {}
    for capture, nodes in captures.items():
        if not capture.startswith("name.definition."):
            continue
        kind = capture.removeprefix("name.definition.")
        rank = _KIND_RANK.get(kind, len(_KIND_ORDER))
        for node in nodes:
            key = (node.start_byte, node.end_byte)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, kind, node)
    return tuple(Definition(_text(node), kind, node.start_point[0] + 1)
                 for _key, (_rank, kind, node) in sorted(best.items()))


def _distinct_names(nodes: Iterable[Node]) -> tuple[str, ...]:
    return tuple(sorted({name for name in map(_text, nodes) if len(name) >= 2}))


def _imports(captures: dict[str, list[Node]]) -> tuple[str, ...]:
    found = [(node.start_byte, capture, node) for capture, nodes in captures.items()
             if capture == "import" or capture.startswith("import.") for node in nodes]
    specs: dict[str, None] = {}
    for _start, capture, node in sorted(found, key=lambda item: item[0]):
        for spec in _import_specs(capture, node):
            if spec:
                specs.setdefault(spec)
    return tuple(specs)


def _import_specs(capture: str, node: Node) -> list[str]:
    if capture == "import.mod":
        return [f"mod {_text(node)}"]
    if capture == "import.relative":
        path = unquote(_text(node))
        return [path if path.startswith((".", "/")) else f"./{path}"]
    if capture == "import.dir":
        return [f".{unquote(_text(node))}"]
    kind = node.type
    if kind in _STRING_NODES:
        return [unquote(_text(node))]
    if kind == "relative_import":
        return _python_relative(node)
    if kind.startswith("use_") or kind == "scoped_use_list":
        return _rust_use(node, "")
    if kind in ("name", "qualified_name", "namespace_name") and _in_php_use(node):
        return [_php_use(node)]
    spec = _compact(node)
    if not spec.startswith("<"):  # C# `using X = A.B<T>;` names the type A.B
        spec = _GENERIC_ARGS.sub("", spec)
    return [spec + _wildcard_suffix(node)]


def _compact(node: Node) -> str:
    return "".join(_text(node).split())


def _wildcard_suffix(node: Node) -> str:
    sibling = node.next_sibling
    while sibling is not None:
        if sibling.type in ("*", "asterisk"):
            return ".*"
        sibling = sibling.next_sibling
    return ""


def _python_relative(node: Node) -> list[str]:
    prefix = _compact(node)
    if any(child.type == "dotted_name" for child in node.children) or node.parent is None:
        return [prefix]
    names = []
    for name in node.parent.children_by_field_name("name"):
        target = name.child_by_field_name("name") if name.type == "aliased_import" else name
        if target is not None:
            names.append(prefix + _compact(target))
    return names or [prefix]


def _rust_use(node: Node, prefix: str) -> list[str]:
    def join(path: str) -> str:
        return f"{prefix}::{path}" if prefix and path else prefix or path

    kind = node.type
    if kind == "use_as_clause":
        path = node.child_by_field_name("path")
        return _rust_use(path, prefix) if path is not None else []
    if kind == "use_wildcard":
        inner = node.named_children
        return [join(_compact(inner[0]) if inner else "") + "::*"]
    if kind == "self":
        return [prefix or "self"]
    if kind in ("scoped_use_list", "use_list"):
        path = node.child_by_field_name("path")
        scope = join(_compact(path)) if path is not None else prefix
        items = node.child_by_field_name("list") if kind == "scoped_use_list" else node
        if items is None:
            return []
        return [spec for child in items.named_children if "comment" not in child.type
                for spec in _rust_use(child, scope)]
    return [join(_compact(node))]


def _in_php_use(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "namespace_use_clause"


def _php_use(node: Node) -> str:
    name = _compact(node).lstrip("\\")
    group = node.parent.parent if node.parent is not None else None
    if group is not None and group.type == "namespace_use_group" and group.parent is not None:
        for sibling in group.parent.named_children:
            if sibling.type == "namespace_name":
                return f"{_compact(sibling).strip(chr(92))}\\{name}"
    return name


# ---------------------------------------------------------------- docstrings

def _python_docstring(root: Node) -> str:
    for child in root.named_children:
        if child.type == "comment":
            continue
        if child.type == "expression_statement" and child.named_child_count == 1:
            string = child.named_children[0]
            if string.type == "string":
                content = "".join(_text(part) for part in string.named_children
                                  if part.type == "string_content")
                paragraph = first_paragraph(content.splitlines())
                return "" if LICENSE_HEADER.match(paragraph) else paragraph
        return ""
    return ""
