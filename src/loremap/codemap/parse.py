"""Parse one source file into its FileFacts: tree-sitter tag queries, or regexes without a grammar.

The only module that imports `tree_sitter`. Grammar wheels load lazily through importlib the first
time a language is met; the parser and the compiled query of each language are made once per
process and kept in `_TOOLS`. The tag queries are package data (`queries/<name>.scm`) with the
captures `@name.definition.<kind>`, `@name.reference.<kind>` and `@import[.variant]`.

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

import bisect
import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from typing import NamedTuple

from tree_sitter import Language as Grammar
from tree_sitter import Node, Parser, Query, QueryCursor

from loremap.codemap.facts import Definition, FileFacts
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
_DOCSTRING_MAX = 300
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
        return _parse_with_regex(path, language, data)
    tools = language_tools(language)
    tree = tools.parser.parse(data)
    root = tree.root_node
    captures = QueryCursor(tools.query).captures(root)
    docstring = _python_docstring(root) if language == "python" else ""
    return FileFacts(
        path=path,
        language=language,
        docstring=docstring or _comment_docstring(language, data),
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
        path = _unquote(_text(node))
        return [path if path.startswith((".", "/")) else f"./{path}"]
    if capture == "import.dir":
        return [f".{_unquote(_text(node))}"]
    kind = node.type
    if kind in _STRING_NODES:
        return [_unquote(_text(node))]
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


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] in "'\"`" and text[-1] == text[0]:
        return text[1:-1]
    return text


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
                return _first_paragraph(content.splitlines())
        return ""
    return ""


_LINE_MARKERS = {
    "python": ("#",), "ruby": ("#",), "shell": ("#",), "css": (),
}
_DEFAULT_LINE_MARKERS = ("//",)
_BLOCK_LANGUAGES_WITHOUT = frozenset({"python", "ruby", "shell"})
_DIRECTIVE = re.compile(  # editor modelines, encoding cookies, build tags, linter pragmas
    r"-\*-.*-\*-|^(?:vim?|ex):|^(?:frozen_string_literal|encoding|coding|warn_indent|"
    r"shareable_constant_value|typed):|^go:\w|^\+build\b|^(?:eslint|jshint|jslint)\b|"
    r"^prettier-ignore|^@ts-|^@flow\b|^#(?:end)?region\b|^<reference\b|"
    r"^(?:pylint|mypy|type|flake8|isort|fmt|ruff|pyright)\s*:|^noqa\b|^shellcheck\s+\w+=")
_LICENSE = re.compile(r"^(?:copyright|spdx|licen[cs]e|\(c\)|©|all rights reserved)",
                      re.IGNORECASE)
_HEAD_BYTES = 16384


def _comment_docstring(language: str, data: bytes) -> str:
    """The first paragraph of the first leading comment block that is not a licence header."""
    for block in _leading_comment_blocks(language, data[:_HEAD_BYTES].decode(
            "utf-8", errors="replace")):
        paragraph = _first_paragraph(block)
        if paragraph and not _LICENSE.match(paragraph):
            return paragraph
    return ""


def _leading_comment_blocks(language: str, text: str) -> list[list[str]]:
    line_markers = _LINE_MARKERS.get(language, _DEFAULT_LINE_MARKERS)
    allow_blocks = language not in _BLOCK_LANGUAGES_WITHOUT
    blocks: list[list[str]] = []
    current: list[str] = []
    lines = iter(text.splitlines())
    for index, raw in enumerate(lines):
        line = raw.strip()
        if index == 0 and (line.startswith("#!") or line.startswith("<?php")):
            line = line.removeprefix("<?php").strip() if line.startswith("<?php") else ""
        if not line:
            if current:
                blocks.append(current)
                current = []
            continue
        marker = next((m for m in line_markers if line.startswith(m)), None)
        if marker is not None:
            body = line[len(marker):].lstrip("/!#").strip()
            if not _DIRECTIVE.search(body):
                current.append(body)
            continue
        if allow_blocks and line.startswith("/*"):
            if current:
                blocks.append(current)
            current = []
            blocks.append(_block_comment(line, lines))
            continue
        break
    if current:
        blocks.append(current)
    return blocks


def _block_comment(first: str, rest: Iterator[str]) -> list[str]:
    body: list[str] = []
    line = first[2:]
    while True:
        end = line.find("*/")
        piece = line if end < 0 else line[:end]
        body.append(piece.strip().lstrip("*!").strip())
        if end >= 0:
            return body
        following = next(rest, None)
        if following is None:
            return body
        line = following


def _first_paragraph(lines: Iterable[str]) -> str:
    words: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not any(char.isalnum() for char in stripped):
            if words:
                break
            continue
        words.extend(stripped.split())
    text = " ".join(words)
    if len(text) > _DOCSTRING_MAX:
        text = text[:_DOCSTRING_MAX - 1].rstrip() + "…"
    return text


# ---------------------------------------------------------------- regex fallback

class _RegexRules(NamedTuple):
    imports: tuple[re.Pattern[str], ...]
    definitions: tuple[tuple[re.Pattern[str], str], ...]
    calls: bool  # also collect `name(` call sites as references
    specs: Callable[[str], list[str]] = lambda text: [text.strip()]  # import match -> specifiers


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


_URL = re.compile(r"""["']([^"']+)["']|url\(\s*([^)"'\s]+)\s*\)""")
# `$(dirname "$0")/x.sh` and friends: the script's own folder, encoded as `./x.sh`.
_SCRIPT_DIR = re.compile(r"""^(?:\$\(\s*dirname\s+"?\$\{?(?:0|BASH_SOURCE(?:\[0\])?)\}?"?\s*\)"""
                         r"""|\$\{BASH_SOURCE(?:\[0\])?%/\*\})(?=/)""")
_CSS_RULES = _RegexRules(
    imports=(_rx(r"^\s*@(?:import|use|forward)\s+([^;\n]+)"),),
    definitions=(
        (_rx(r"^\s*@mixin\s+([\w-]+)"), "function"),
        (_rx(r"^\s*@function\s+([\w-]+)"), "function"),
        (_rx(r"^[$@]([\w-]+)\s*:"), "variable"),
    ),
    calls=False,
    specs=lambda text: [quoted or bare for quoted, bare in _URL.findall(text)],
)
_REGEX_RULES: dict[str, _RegexRules] = {
    "dart": _RegexRules(
        imports=(_rx(r"""^\s*(?:import|export|part)\s+['"]([^'"]+)['"]"""),),
        definitions=(
            (_rx(r"^\s*(?:(?:abstract|sealed|base|final|interface|mixin)\s+)*class\s+(\w+)"),
             "class"),
            (_rx(r"^\s*mixin\s+(\w+)"), "trait"),
            (_rx(r"^\s*enum\s+(\w+)"), "enum"),
            (_rx(r"^\s*extension\s+(\w+)\s+on\b"), "class"),
            (_rx(r"^\s*typedef\s+(\w+)"), "type"),
            (_rx(r"^(?!(?:return|if|for|while|switch|class|import|export|else|new)\b)"
                 r"[A-Za-z_][\w<>?, ]*\s+(\w+)\s*\([^;{]*\)\s*(?:async\s*)?(?:\{|=>)"),
             "function"),
            (_rx(r"^[ \t]+(?:(?:static|external|@\w+)\s+)*(?!(?:return|if|for|while|switch|"
                 r"else|new|await|throw|catch|const|final|var)\b)[A-Za-z_][\w<>?, ]*\s+(\w+)"
                 r"\s*\([^;{]*\)\s*(?:async\s*)?(?:\{|=>)"), "method"),
        ),
        calls=True,
    ),
    "swift": _RegexRules(
        imports=(_rx(r"^\s*(?:@\w+\s+)*import\s+(?:(?:typealias|struct|class|enum|protocol|"
                     r"let|var|func)\s+)?([\w.]+)"),),
        definitions=(
            (_rx(r"^\s*(?:(?:public|private|internal|fileprivate|open|final)\s+)*"
                 r"(?:class|actor)\s+(\w+)"), "class"),
            (_rx(r"^\s*(?:(?:public|private|internal|fileprivate)\s+)*struct\s+(\w+)"),
             "struct"),
            (_rx(r"^\s*(?:(?:public|private|internal|fileprivate|indirect)\s+)*enum\s+(\w+)"),
             "enum"),
            (_rx(r"^\s*(?:(?:public|private|internal|fileprivate)\s+)*protocol\s+(\w+)"),
             "interface"),
            (_rx(r"^\s*(?:(?:public|private|internal|fileprivate)\s+)*typealias\s+(\w+)"),
             "type"),
            (_rx(r"^(?:(?:public|private|internal|fileprivate)\s+)*func\s+(\w+)"), "function"),
            (_rx(r"^[ \t]+(?:(?:public|private|internal|fileprivate|open|static|class|"
                 r"override|final|mutating|@\w+)\s+)*func\s+(\w+)"), "method"),
        ),
        calls=True,
    ),
    "scala": _RegexRules(
        imports=(_rx(r"^\s*import\s+(\w+(?:\.\w+)*(?:\.\{[^}\n]*\}|\._|\.\*)?)"),),
        specs=lambda text: _scala_selectors(text.strip()),
        definitions=(
            (_rx(r"^\s*(?:(?:abstract|final|sealed|case|private|protected|implicit)\s+)*"
                 r"class\s+(\w+)"), "class"),
            (_rx(r"^\s*(?:(?:case|private|protected|implicit)\s+)*object\s+(\w+)"), "module"),
            (_rx(r"^\s*(?:(?:sealed|private|protected)\s+)*trait\s+(\w+)"), "trait"),
            (_rx(r"^\s*(?:(?:private|protected|opaque)\s+)*type\s+(\w+)"), "type"),
            (_rx(r"^\s*enum\s+(\w+)"), "enum"),
            (_rx(r"^def\s+(\w+)"), "function"),
            (_rx(r"^[ \t]+(?:(?:override|private|protected|final|implicit|inline)\s+)*"
                 r"def\s+(\w+)"), "method"),
        ),
        calls=True,
    ),
    "css": _CSS_RULES,
    "scss": _CSS_RULES,
    "less": _CSS_RULES,
    "shell": _RegexRules(
        imports=(_rx(r"""^\s*(?:source|\.)\s+("(?:\$\([^)\n]*\)|[^"\n])*"|'[^'\n]*'|[^\s;|&]+)"""),),
        definitions=(
            (_rx(r"^\s*function\s+([\w:.-]+)"), "function"),
            (_rx(r"^\s*([\w:.-]+)\s*\(\s*\)\s*\{?"), "function"),
        ),
        calls=False,
        specs=lambda text: [_SCRIPT_DIR.sub(".", _unquote(text))],
    ),
}
_CALL = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)\s*\(|\.([A-Za-z_]\w*)\s*\(")
_NOT_CALLS = frozenset(
    "if for while switch catch return func fun def class struct enum init super self this "
    "guard case when match print assert sizeof typeof new throw await async yield in is as "
    "import export part".split())


def _parse_with_regex(path: str, language: str, data: bytes) -> FileFacts:
    text = data.decode("utf-8", errors="replace")
    rules = _REGEX_RULES.get(language)
    imports: dict[str, None] = {}
    definitions: list[Definition] = []
    references: set[str] = set()
    if rules is not None:
        starts = _line_starts(text)
        found = sorted((match.start(1), match.group(1)) for pattern in rules.imports
                       for match in pattern.finditer(text))
        imports = dict.fromkeys(spec for _start, text in found for spec in rules.specs(text))
        seen: set[tuple[str, int]] = set()
        for pattern, kind in rules.definitions:
            for match in pattern.finditer(text):
                line = _line_of(starts, match.start(1))
                if (match.group(1), line) not in seen:
                    seen.add((match.group(1), line))
                    definitions.append(Definition(match.group(1), kind, line))
        if rules.calls:
            references = {name for match in _CALL.finditer(text)
                          for name in match.groups() if name and name not in _NOT_CALLS}
    return FileFacts(
        path=path,
        language=language,
        docstring=_comment_docstring(language, data),
        definitions=tuple(sorted(definitions, key=lambda d: (d.line, d.name))),
        references=tuple(sorted(name for name in references if len(name) >= 2)),
        imports=tuple(spec for spec in imports if spec),
    )


def _scala_selectors(spec: str) -> list[str]:
    """`a.b.{C, D => E, _}` -> a.b.C, a.b.D, a.b._ (a selector list names several imports)."""
    if not spec.endswith("}") or ".{" not in spec:
        return [spec]
    base, _, selectors = spec[:-1].partition(".{")
    names = (re.split(r"=>|\sas\s", selector)[0].strip() for selector in selectors.split(","))
    return [f"{base}.{name}" for name in names if name]


def _line_starts(text: str) -> list[int]:
    return [0, *(match.end() for match in re.finditer("\n", text))]


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)
