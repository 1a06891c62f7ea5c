"""Facts of a file in a language without a tree-sitter grammar, read with regexes.

Dart, Swift, Scala, CSS/SCSS/Less and shell have no grammar in `LANGUAGES`, so their imports,
definitions and (for Dart, Swift and Scala) call sites are found with line-anchored regexes.
Coarser than a syntax tree, but it gives these languages the same FileFacts shape as the
tree-sitter path and never raises on the content. The import specifiers it yields are listed
with the others in `loremap.codemap.parse`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import NamedTuple

from loremap.codemap.docstrings import comment_docstring
from loremap.codemap.facts import Definition, FileFacts


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
        specs=lambda text: [_SCRIPT_DIR.sub(".", unquote(text))],
    ),
}
_CALL = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)\s*\(|\.([A-Za-z_]\w*)\s*\(")
_NOT_CALLS = frozenset(
    "if for while switch catch return func fun def class struct enum init super self this "
    "guard case when match print assert sizeof typeof new throw await async yield in is as "
    "import export part".split())


def parse_with_regex(path: str, language: str, data: bytes) -> FileFacts:
    """The facts of one file in a language without a grammar (regex rules where it has any,
    else only the comment docstring). Never raises on the content."""
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
        docstring=comment_docstring(language, data),
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


def unquote(text: str) -> str:
    """`text` without one pair of matching quotes (', ", `) around it."""
    if len(text) >= 2 and text[0] in "'\"`" and text[-1] == text[0]:
        return text[1:-1]
    return text
