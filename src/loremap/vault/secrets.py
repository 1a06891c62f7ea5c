"""Find credentials in text before it is written into a note.

Notes are markdown committed to git, so a token pasted into one is published with the repository.
Every write path runs `scan` first and either refuses the text or stores it through `redact`.
Notes are mostly prose *about* code, so a false alarm costs as much as a miss: provider tokens
are recognised by their documented prefixes, and the generic "NAME = value" rule only fires when
the value is neither a placeholder, a reference nor an identifier-shaped word.

Generic assignment rule (`password/secret/token assignment`), decided here once:
- the name must *end* in a secret word (`DB_PASSWORD`, `clientSecret`, `api-key`), so
  `refreshTokenExpiry` or `password_hash` are never names;
- the value is a quoted literal, or a bare word ended by whitespace, punctuation or the line end
  (so `get_token()` and `os.environ["X"]` are code, not values);
- it is at least 8 characters, has no whitespace, contains a letter and a digit or symbol (plain
  words, identifiers and digit-only ids are not secrets), is not a slug (`db-creds-v2`,
  `settings.API_KEY_2`) and is not a placeholder (`${X}`, `$X`, `<x>`, `{{x}}`, `%s`, `xxxx`,
  `****`, `changeme`, anything with "example", "your", "dummy", ...);
- its Shannon entropy is at least 2.5 bits per character. Random secrets sit well above 3;
  2.5 keeps weak human passwords such as `hunter2hunter2` (2.8) and `P@ssw0rd` (2.75) while
  dropping patterned fillers such as `aaaa1111` (1.0) or `abcabc12` (2.25).

A URL password is flagged whatever its length unless it is a placeholder or equals the user name
(`postgres:postgres`, `guest:guest` are published defaults). For a URL or an assignment only the
value is the finding's span, so redaction keeps `postgresql://app:[REDACTED ...]@db/x` readable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One credential-looking span: `line` is 1-based, `start`/`end` are offsets into the text."""

    kind: str
    line: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Cheap substring prefilter: the regex only runs when one of these occurs in the text
    # (in the lower-cased text when `lowered`). Keeps a clean 1 KB note at a few microseconds.
    triggers: tuple[str, ...]
    accept: Callable[[re.Match[str]], bool]
    lowered: bool = False
    # The first of these groups that matched is the finding's span; the whole match otherwise.
    groups: tuple[str, ...] = ()


_MIN_ENTROPY = 2.5
_MIN_TOKEN_ENTROPY = 2.0
_MIN_VALUE_LENGTH = 8

_PLACEHOLDER_WORDS = frozenset(
    {
        "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "changeme",
        "change_me", "change-me", "null", "none", "nil", "true", "false", "undefined", "required",
        "optional", "string", "str", "bytes", "redacted", "hidden", "masked", "example", "todo",
    }
)  # fmt: skip
_PLACEHOLDER_PARTS = (
    "example", "changeme", "change_me", "change-me", "placeholder", "your", "redacted", "dummy",
    "sample", "xxxx", "****", "...", "<", ">", "{{", "}}", "${",
)  # fmt: skip
_SYMBOLS = frozenset("!@#$%^&*+=?~|")
# Paths, ARNs and URLs name where a secret lives; a URL's own password has its rule.
_LOCATORS = ("/", "./", "../", "~/", "arn:")

_SLUG = re.compile(r"[A-Za-z]+\d{0,3}(?:[-_./:][A-Za-z]+\d{0,3})+")
_REFERENCE = re.compile(r"\$[\w{(]|%\(?\w*\)?[sdr]$|%\w+%$")

_PEM_NL = r"(?:\r?\n|(?:\\r)?\\n)"  # real line breaks, or `\n` escapes inside a JSON string
_PEM_LINE = (
    _PEM_NL
    + r"[ \t]*(?:(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*:[^\r\n\\]*)[ \t]*)?(?=[\r\n\\\"]|\Z)"
)
_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    # Trigger: the END line is found within the base64 body. Why: a truncated paste must still
    # hide its body. Outcome: otherwise the span runs to the last body-shaped line.
    rf"(?:(?:{_PEM_LINE})*?{_PEM_NL}[ \t]*-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    rf"|(?:{_PEM_LINE})*)"
)
_AWS_SECRET = re.compile(
    r"(?i:aws_?secret(?:_?access)?_?key)[\"'`]?[ \t]*(?:=>|:=|=|:)[ \t]*[\"'`]?"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")
_GITHUB = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251})\b")
_GITLAB = re.compile(
    r"\bgl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent|ffct)-[A-Za-z0-9_-]{20,300}"
    r"(?:\.[0-9a-z]{9})?(?![A-Za-z0-9_-])"
)
_SLACK_WEBHOOK = re.compile(
    r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"
)
_SLACK_TOKEN = re.compile(
    r"\b(?:xox[abeoprs]-(?:\d-)?[A-Za-z0-9]{6,}(?:-[A-Za-z0-9]+)*"
    r"|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}|xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)"
)
_STRIPE = re.compile(r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,247}\b")
_ANTHROPIC = re.compile(r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{32,}")
_OPENAI = re.compile(
    r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9_-]*T3BlbkFJ[A-Za-z0-9_-]+"
    r"|[A-Za-z0-9]{32,}(?![A-Za-z0-9_-]))"
)
_GOOGLE = re.compile(r"\bAIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
_NPM = re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")
_URL_PASSWORD = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://(?P<user>[^\s:/?#@'\"<>\[\]]*)"
    r":(?P<secret>[^\s/?#'\"<>]+)@(?=[A-Za-z0-9\[])"
)

_SECRET_NAME = (
    r"(?:(?-i:(?<![a-z]))(?:pass|pwd)|password|passwd|passphrase|secret|token"
    r"|(?:api|access|private|secret|signing|encryption)[_-]?key|credentials?)"
)
_TYPE_HINT = r"[ \t]*:[ \t]*[A-Za-z_][\w.]*(?:\[[^\]\r\n]{0,40}\])?(?:[ \t]*\|[ \t]*None)?[ \t]*="
_ASSIGNMENT = re.compile(
    rf"{_SECRET_NAME}(?![A-Za-z0-9_])[*\"'`]{{0,3}}"
    rf"(?:{_TYPE_HINT}|[ \t]*(?:=>|:=|=|:(?!:)))[ \t]*(?:\*+[ \t]*)?"
    r"(?:\"(?P<dq>[^\"\r\n]{1,512})\"|'(?P<sq>[^'\r\n]{1,512})'|`(?P<bq>[^`\r\n]{1,512})`"
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>|*]{1,512})(?=[\s,;)\]}>`|*]|\Z))",
    re.IGNORECASE,
)


def _entropy(value: str) -> float:
    """Shannon entropy of the characters of `value`, in bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if lowered in _PLACEHOLDER_WORDS or len(set(value)) == 1:
        return True
    return _REFERENCE.match(value) is not None or any(p in lowered for p in _PLACEHOLDER_PARTS)


def _is_secret_value(value: str) -> bool:
    if len(value) < _MIN_VALUE_LENGTH or any(ch.isspace() for ch in value):
        return False
    if value.startswith(_LOCATORS) or "://" in value:
        return False
    if not any(ch.isalpha() for ch in value):
        return False
    if not any(ch.isdigit() or ch in _SYMBOLS for ch in value):
        return False
    if _SLUG.fullmatch(value) or _is_placeholder(value):
        return False
    return _entropy(value) >= _MIN_ENTROPY


def _looks_random(match: re.Match[str]) -> bool:
    token = match.group()
    lowered = token.lower()
    if "example" in lowered or "xxxx" in lowered or "****" in lowered:
        return False
    return _entropy(token) >= _MIN_TOKEN_ENTROPY


def _has_digit_and_random(match: re.Match[str]) -> bool:
    return any(ch.isdigit() for ch in match.group()) and _looks_random(match)


def _aws_secret_ok(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return "EXAMPLE" not in value and _entropy(value) >= 3.0


def _url_password_ok(match: re.Match[str]) -> bool:
    password = match.group("secret")
    return password != match.group("user") and not _is_placeholder(password)


def _assignment_ok(match: re.Match[str]) -> bool:
    value = match.group("dq") or match.group("sq") or match.group("bq") or match.group("bare")
    return value is not None and _is_secret_value(value)


def _always(match: re.Match[str]) -> bool:
    return True


# Order is priority: when two rules claim the same span, the earlier rule names it.
_RULES = (
    _Rule("private key block", _PEM, ("PRIVATE KEY",), _always),
    _Rule("AWS secret access key", _AWS_SECRET, ("aws",), _aws_secret_ok, lowered=True,
          groups=("secret",)),
    _Rule("AWS access key id", _AWS_KEY_ID, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
          _looks_random),
    _Rule("GitHub token", _GITHUB, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
          _looks_random),
    _Rule("GitLab token", _GITLAB, ("gl",), _looks_random),
    _Rule("Slack webhook URL", _SLACK_WEBHOOK, ("hooks.slack.com",), _looks_random),
    _Rule("Slack token", _SLACK_TOKEN, ("xox", "xapp-"), _has_digit_and_random),
    _Rule("Stripe secret key", _STRIPE, ("k_live_", "k_test_", "k_prod_"), _looks_random),
    _Rule("Anthropic API key", _ANTHROPIC, ("sk-ant-",), _looks_random),
    _Rule("OpenAI API key", _OPENAI, ("sk-",), _has_digit_and_random),
    _Rule("Google API key", _GOOGLE, ("AIza",), _looks_random),
    _Rule("npm token", _NPM, ("npm_",), _looks_random),
    _Rule("JSON Web Token", _JWT, ("eyJ",), _always),
    _Rule("URL with a password", _URL_PASSWORD, ("://",), _url_password_ok, groups=("secret",)),
    _Rule("password/secret/token assignment", _ASSIGNMENT,
          ("pass", "pwd", "secret", "token", "key", "credential"), _assignment_ok,
          lowered=True, groups=("dq", "sq", "bq", "bare")),
)  # fmt: skip


def _span(rule: _Rule, match: re.Match[str]) -> tuple[int, int]:
    for name in rule.groups:
        if match.group(name) is not None:
            return match.span(name)
    return match.span()


def _candidates(text: str) -> list[tuple[int, int, int, str]]:
    lowered: str | None = None
    found: list[tuple[int, int, int, str]] = []
    for priority, rule in enumerate(_RULES):
        if rule.lowered:
            lowered = text.lower() if lowered is None else lowered
            haystack = lowered
        else:
            haystack = text
        if not any(trigger in haystack for trigger in rule.triggers):
            continue
        for match in rule.pattern.finditer(text):
            if rule.accept(match):
                start, end = _span(rule, match)
                found.append((start, -(end - start), priority, rule.kind))
    return found


def scan(text: str) -> list[SecretFinding]:
    """Every credential-looking span in `text`, sorted by start and never overlapping.

    When two matches overlap, the one that starts first wins, then the longer, then the more
    specific rule (a `ghp_` token assigned to `token:` is reported as a GitHub token).
    """
    findings: list[SecretFinding] = []
    last_end = 0
    line, line_pos = 1, 0
    for start, neg_length, _, kind in sorted(_candidates(text)):
        if start < last_end:
            continue
        line += text.count("\n", line_pos, start)
        line_pos = start
        last_end = start - neg_length
        findings.append(SecretFinding(kind=kind, line=line, start=start, end=last_end))
    return findings


def redact(text: str, findings: Sequence[SecretFinding]) -> str:
    """`text` with each finding's span replaced by `[REDACTED <kind>]`.

    Findings may come in any order; one that overlaps an earlier-starting finding is skipped.
    """
    parts: list[str] = []
    cursor = 0
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if finding.start < cursor:
            continue
        parts.append(text[cursor : finding.start])
        parts.append(f"[REDACTED {finding.kind}]")
        cursor = finding.end
    parts.append(text[cursor:])
    return "".join(parts)
