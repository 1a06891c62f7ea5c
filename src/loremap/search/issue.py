"""Read a pasted issue as its parts: title, prose, code, output and noise.

A bug report is not a question. Beside the words that say what is wrong it holds code (the
example that shows it), output (tracebacks, logs, a test run), and noise: template headings
("### Describe the bug", "**Expected behavior**", "_No response_"), environment reports and
version dumps (`pip list`, "- Python version: 3.8.2"), HTML comments and tags, links, commit
hashes, prompt numbers (`In [12]:`), long numbers. Kept as one bag of words, the rarest tokens
of such a text are the noise (a hash split into pieces, a version's digits, a date), and the
words that carry the topic, common in the project, are dropped.

`read` splits the text into parts by its lines (fenced blocks, headings and the sections they
open, prompts, tracebacks) and cleans each part of the tokens that never name anything in a
project (links, hashes, bare numbers, prompts, HTML). The engine then weighs each part's words
(`SearchConfig.issue`), keeps the title's words whatever their frequency, and reads entities
from the parts that are not noise. Every rule here is about the shape of bug reports in
general, never about one project.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

KINDS = ("title", "prose", "code", "output")  # the weighed parts; "noise" weighs nothing

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s+(\S.*)|\*\*([^*]+)\*\*:?|__([^_]+)__:?)$")
_COMMENT_OPEN, _COMMENT_CLOSE = "<!--", "-->"
_TAG_LINE = re.compile(r"^\s*(?:</?[A-Za-z][^>]*>\s*)+$")
_EMPTY_ANSWER = re.compile(r"^\s*(?:_no response_|n/?a|none|-+|\.+)\s*$", re.IGNORECASE)
# A heading that opens an environment report: what follows, up to the next heading, is noise.
_REPORT = re.compile(r"\b(?:environment|versions?|os|platform|system info\w*|operating system|"
                     r"screenshots?|installed|pip (?:list|freeze)|dependencies|packages|"
                     r"your project|extra tools|setup|extensions|plugins)\b", re.IGNORECASE)
# "- Python version: 3.8.2", "OS: Ubuntu 18.04", "pytest==5.2.2", "attrs   19.3.0": a name of
# a few words, a separator, then a version; or a line made mostly of versions (a test run's
# "platform linux -- Python 3.7.3, pytest-5.2.2, py-1.8.0"). Read with string operations and
# whole-token matches: a pattern over the whole line backtracks badly on long runs of spaces.
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+[\w.+-]*")
_VERSION_TOKEN = re.compile(r"v?\d+(?:\.\d+)+[\w.+-]*[,;)]?")
_KEY_WORD = re.compile(r"[\w.()/-]+")
_SEPARATOR = re.compile(r":|==|>=|~=|<=")
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.(?=\s)|In \[\d*\]:|Out\[\d*\]:|\$|❯+|%|#\s?$)\s?")
_TRACEBACK = re.compile(r"^\s*(?:Traceback \(most recent call last\)|File \"[^\"]+\", line \d+)")
# A frame of a traceback, its file and its function: Python's `File "x/y.py", line 12, in f`,
# IPython's `File ~/x/y.py:12, in Plot.f(self)` (8 and later) and `~/x/y.py in f(self)` (7),
# pytest's `x/y.py:12: in f` (or `x/y.py:12: ValueError`).
_FRAME = re.compile(
    r'File "(?P<python>[^"\n]+)", line \d+(?:, in (?P<python_in>[\w.<>]+))?'
    r'|^[ \t]*File (?P<ipython>[^\s"]+\.py):\d+(?:, in (?P<ipython_in>[\w.<>]+))?'
    r'|^[ \t]*(?P<ipython7>[^\s"]+\.py) in (?P<ipython7_in>[\w.<>]+)\('
    r'|^[ \t]*(?P<pytest>[\w.\\/~:-]+\.py):\d+:(?: in (?P<pytest_in>[\w.<>]+))?',
    re.MULTILINE)
_FRAME_FILES = ("python", "ipython", "ipython7", "pytest")
# A rule or a banner (`=== FAILURES ===`, `>>>>> PDB post_mortem >>>>>`): a runner's
# decoration, whose words are the runner's, not the fault's.
_RULE_LINE = re.compile(r"^\s*[=_*!~+-]{3,}.*[=_*!~+-]{3,}\s*$|^\s*[=_*!~+-]{3,}\s*$"
                        r"|^\s*[<>]{4,}.*[<>]{4,}\s*$")
_INDENTED = re.compile(r"^(?: {4}|\t)\S")
# Inline noise: links, HTML tags, hashes, prompt numbers, versions, bare numbers.
_INLINE = re.compile(
    r"https?://\S+|www\.\S+"
    r"|</?[A-Za-z][^<>\n]{0,300}>"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"
    r"|\b0x[0-9a-fA-F]+\b"
    r"|\[(?:gw)?\d+\]|In \[\d*\]:|Out\[\d*\]:"
    r"|(?<![\w.])v?\d+(?:[.:,/-]\d+)*(?![\w])", re.IGNORECASE)
_CODE_TAGS = frozenset({"python", "py", "python3", "py3", "pycon", "ipython", "ipython3",
                        "rst", "restructuredtext", "ini", "toml", "cfg", "yaml", "yml", "json",
                        "jinja", "html", "css", "javascript", "js", "c", "cpp", "diff"})
_OUTPUT_TAGS = frozenset({"console", "shell", "sh", "bash", "text", "txt", "output", "log",
                          "pytb", "pytb3", "traceback", "none", "plain", "zsh"})
_TITLE_MAX = 200  # a first line longer than this is prose, not a title
# A line longer than this is never a heading, a version or a rule: the line rules are not
# tried on it (a pasted minified file would cost them time for nothing).
_LONG_LINE = 500


class Part(NamedTuple):
    """One part of an issue: its kind (`KINDS` or "noise") and its cleaned text."""

    kind: str
    text: str


def looks_like_issue(text: str) -> bool:
    """A text of three lines or more: a pasted report, log or issue rather than a question."""
    return text.count("\n") >= 2 and len(text.strip().splitlines()) >= 3


def clean(text: str) -> str:
    """`text` without links, HTML, hashes, prompt numbers, versions and bare numbers."""
    return _INLINE.sub(" ", text)


def frames(text: str) -> list[str]:
    """The files of the traceback frames in `text`, deepest (last) first, each once: where
    a traceback ends is nearer the fault than where it starts."""
    found = [next(m.group(g) for g in _FRAME_FILES if m.group(g))
             for m in _FRAME.finditer(text)]
    return list(dict.fromkeys(reversed(found)))


def functions(text: str) -> list[str]:
    """The functions of the traceback frames in `text` (`File "x.py", line 3, in render`;
    `Plot._plot` gives `Plot` and `_plot`), deepest first, each once: names that are code
    whatever they look like."""
    found: list[str] = []
    for m in _FRAME.finditer(text):
        name = next((m.group(g + "_in") for g in _FRAME_FILES if m.group(g + "_in")), None)
        if name:
            found += [n for n in name.split(".") if n.isidentifier()]
    return list(dict.fromkeys(reversed(found)))


def read(text: str) -> list[Part]:
    """The parts of `text`, in order, each cleaned; consecutive lines of a kind are joined."""
    runs: list[tuple[str, list[str]]] = []
    for kind, line in _lines(text.splitlines()):
        if kind != "noise":
            line = clean(_PROMPT.sub("", line))
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(line)
        else:
            runs.append((kind, [line]))
    parts = [Part(kind, "\n".join(lines)) for kind, lines in runs]
    return [p for p in parts if p.text.strip()]


def _lines(lines: list[str]) -> Iterator[tuple[str, str]]:
    """(kind, line) for each line of an issue."""
    titled = False
    report = False  # inside a section an environment heading opened
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if _COMMENT_OPEN in line:
            end = _comment_end(lines, i - 1)
            yield from (("noise", x) for x in lines[i - 1:end + 1])
            i = end + 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, i, fence.group(1))
            kind = "noise" if report else _block_kind(fence.group(2), lines[i:end])
            yield from ((_line_kind(kind, x), x) for x in lines[i:end])
            i = end + 1
            titled = True
            continue
        heading = _heading(line)
        if not titled:
            titled = True
            if len(line) <= _TITLE_MAX:
                yield "title", line if heading is None else heading
                continue
        if heading is not None:
            report = bool(_REPORT.search(heading))
            yield "noise", line
            continue
        yield _loose_kind(line, report), line


def _heading(line: str) -> str | None:
    """The text of a Markdown heading (`### Describe the bug`, `**Expected behavior**`), or
    None for any other line."""
    match = _HEADING.match(line.rstrip()) if len(line) <= _LONG_LINE else None
    if match is None:
        return None
    return (match.group(1) or "").rstrip("# ").strip() or match.group(2) or match.group(3)


def _loose_kind(line: str, report: bool) -> str:
    """The kind of a line outside fences."""
    if len(line) > _LONG_LINE:
        return "noise" if report else "prose"
    if report or _TAG_LINE.match(line) or _EMPTY_ANSWER.match(line) or _RULE_LINE.match(line):
        return "noise"
    if _versions(line):
        return "noise"
    if _TRACEBACK.match(line):
        return "output"
    if _PROMPT.match(line) or _INDENTED.match(line):
        return "code"
    return "prose"


def _versions(line: str) -> bool:
    """A line that only reports versions (a traceback's frame never does, whatever its
    path holds: `.../python3.9/site-packages/...`)."""
    if _TRACEBACK.match(line):
        return False
    words = line.strip().lstrip("-*").split()
    if not words:
        return False
    separator = _SEPARATOR.search(line)
    if separator is not None:
        key = line[:separator.start()].strip().lstrip("-*").split()
        value = line[separator.end():].split()
    else:  # a `pip list` row: the name, spaces, the version
        key, value = words[:1], words[1:]
    if (1 <= len(key) <= 4 and all(_KEY_WORD.fullmatch(k) for k in key)
            and 1 <= len(value) <= 6 and any(_VERSION_TOKEN.fullmatch(v) for v in value[:3])):
        return True
    count = len(_VERSION.findall(line))
    return count >= 2 and len(words) <= 4 * count


def _line_kind(block: str, line: str) -> str:
    """A fenced line's kind: its block's, unless the line is a rule, a banner or a version."""
    if len(line) > _LONG_LINE:
        return block
    if block == "noise" or _RULE_LINE.match(line) or _versions(line):
        return "noise"
    return block


def _block_kind(tag: str, lines: list[str]) -> str:
    """A fenced block is code or output: by its language tag, else by what it holds (a
    traceback, prompts of a shell or an error line make it output)."""
    tag = tag.lower()
    if tag in _CODE_TAGS:
        return "code"
    if tag in _OUTPUT_TAGS:
        return "output"
    for line in lines:
        if _TRACEBACK.match(line) or line.lstrip().startswith(("$ ", "E ", "Error", "error:")):
            return "output"
    return "code"


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing a fence opened before `start` (the end if none does)."""
    for j in range(start, len(lines)):
        if lines[j].strip().startswith(fence[:3]) and lines[j].strip().strip(fence[0]) == "":
            return j
    return len(lines)


def _comment_end(lines: list[str], start: int) -> int:
    """Index of the line closing an HTML comment opened on line `start`."""
    for j in range(start, len(lines)):
        if _COMMENT_CLOSE in lines[j][lines[j].find(_COMMENT_OPEN) + 4 if j == start else 0:]:
            return j
    return len(lines) - 1
