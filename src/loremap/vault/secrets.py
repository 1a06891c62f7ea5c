"""Find credentials in text before it is written into a note.

Notes are markdown committed to git, so a token pasted into one is published with the repository.
Every write path runs `scan` first and either refuses the text or stores it through `redact`.
Notes are mostly prose *about* code, so a false alarm costs as much as a miss: provider tokens
are recognised by their documented prefixes (and dropped when the body is `xxxx`, `EXAMPLE` or
too uniform), and the generic "NAME = value" rule only fires on values that look made up.

Generic assignment rule (`password/secret/token assignment`), decided here once:
- the name must *end* in a secret word (`DB_PASSWORD`, `clientSecret`, `api-key`, `dbPass`), so
  `refreshTokenExpiry`, `password_hash` or `bypass` are never names, nor is `AWS::IAM::AccessKey`;
- the value is a quoted literal, or a bare word ended by whitespace, punctuation or the line end
  (so `get_token()` and `os.environ["X"]` are code, not values);
- it is at least 8 characters, has no whitespace, contains a letter and a digit or symbol (plain
  words, identifiers and digit-only ids are not secrets), is not a slug, dotted name, path, URL
  or bare CamelCase type (`db-creds-v2`, `settings.API_KEY_2`, `/home/x`, `PKCS7KeyTypes`) and
  is not a placeholder (`${X}`, `$X`, `<x>`, `{{x}}`, `%s`, `xxxx`, `****`, `changeme`, one
  repeated character, anything containing "example", "your", "dummy", "fake", ...);
- its Shannon entropy is at least 2.5 bits per character. Random secrets sit well above 3;
  2.5 keeps weak human passwords such as `hunter2hunter2` (2.8) and `P@ssw0rd` (2.75) while
  dropping patterned fillers such as `aaaa1111` (1.0) or `abcabc12` (2.25).

A URL password (`scheme://user:pw@host`) is flagged whatever its length unless it is one of the
same placeholders (`password`, `***`, `$PW`, `${PW}`, `<pw>`...), equals the user name
(`postgres:postgres`, `guest:guest` are published defaults) or the host is an RFC 2606
documentation host (`example.com`, `*.test`). For a URL or an assignment only the value is the
finding's span, so redaction keeps `postgresql://app:[REDACTED ...]@db/x` readable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loremap.vault import gitleaks


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One credential-looking span: `line` is 1-based, `start`/`end` are offsets into the text."""

    kind: str
    line: int
    start: int
    end: int


# (original text, match, finding start, finding end) -> is this a real finding?
_Accept = Callable[[str, re.Match[str], int, int], bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    # Every pattern starts on a literal (or a class of rare capitals) so that `re` can skip
    # ahead with a fast substring search: a 1 KB note scans in about twenty microseconds.
    pattern: re.Pattern[str]
    accept: _Accept
    # Pattern and triggers see the lower-cased text (same offsets) instead of IGNORECASE,
    # which is several times slower in `re`.
    lowered: bool = False
    # The token must not continue a longer word (`xghp_...`), checked here rather than with a
    # leading `\b`, which would stop `re` from searching for the literal prefix.
    word_start: bool = False
    # The first of these groups that matched is the finding's span; the whole match otherwise.
    groups: tuple[str, ...] = ()
    # For a pattern with no literal prefix: the regex only runs when one of these occurs.
    triggers: tuple[str, ...] = ()


_MIN_ENTROPY = 2.5
_MIN_TOKEN_ENTROPY = 2.0
_MIN_AWS_SECRET_ENTROPY = 3.0
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
    "sample", "mock", "fake", "xxxx", "****", "...", "<", ">", "{{", "}}", "${",
)  # fmt: skip
_TOKEN_PLACEHOLDER_PARTS = ("example", "xxxx", "****")
_SYMBOLS = frozenset("!@#$%^&*+=?~|")
# Paths, ARNs and URLs say where a secret lives; a URL's own password has its own rule.
_LOCATORS = ("/", "./", "../", "~/", "arn:")

_SLUG = re.compile(r"[A-Za-z]+\d{0,3}(?:[-_./:][A-Za-z]+\d{0,3})+")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_TYPE_NAME = re.compile(r"(?:[A-Z0-9]*[A-Z][a-z]{2,}\d*)+")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{16}")
_HOST = re.compile(r"[A-Za-z0-9.-]*")
_DOC_HOSTS = ("example.com", "example.org", "example.net", ".example", ".invalid", ".test")
_REFERENCE = re.compile(r"\$[\w{(]|%\(?\w*\)?[sdr]$|%\w+%$")
_KEY_OWNER = re.compile(r"(?:api|access|private|secret|signing|encryption)[_-]?\Z")

_PEM_NL = r"(?:\r?\n|(?:\\r)?\\n)"  # real line breaks, or `\n` escapes inside a JSON string
_PEM_LINE = (
    _PEM_NL
    + r"[ \t]*(?:(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z0-9-]*:[^\r\n\\]*)[ \t]*)?(?=[\r\n\\\"]|\Z)"
)
_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    # Trigger: no END line right after the base64 body. Why: a truncated paste must still hide
    # its body. Outcome: the span runs to the last body-shaped line.
    rf"(?:(?:{_PEM_LINE})*?{_PEM_NL}[ \t]*-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    rf"|(?:{_PEM_LINE})*)"
)
# A key pasted into one line (a title, a flattened transcript): header, base64 words, END.
_PEM_ONE_LINE = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[ \t]*[A-Za-z0-9+/=]{16,}"
    r"(?:[ \t]+[A-Za-z0-9+/=]+)*(?:[ \t]*-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?"
)
_AWS_SECRET = re.compile(  # runs on the lower-cased text
    r"aws_?secret(?:_?access)?_?key[\"'`]?[ \t]*(?:=>|:=|=|:)[ \t]*[\"'`]?"
    r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+=])"
)
_AWS_KEY_ID = re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")
_GITHUB = re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251})\b")
_GITLAB = re.compile(
    r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent|ffct)-[A-Za-z0-9_-]{20,300}"
    r"(?:\.[0-9a-z]{9})?(?![A-Za-z0-9_-])"
)
_SLACK_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"
)
_SLACK_TOKEN = re.compile(
    r"(?:xox[abeoprs]-(?:\d-)?[A-Za-z0-9]{6,}(?:-[A-Za-z0-9]+)*"
    r"|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}|xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)"
)
_STRIPE = re.compile(r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,247}\b")
_ANTHROPIC = re.compile(r"sk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{32,}")
_OPENAI = re.compile(
    r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9_-]*T3BlbkFJ[A-Za-z0-9_-]+"
    r"|[A-Za-z0-9]{32,}(?![A-Za-z0-9_-]))"
)
_GOOGLE = re.compile(r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
_NPM = re.compile(r"npm_[A-Za-z0-9]{36}\b")
# A key of `loremap serve --http --tokens` (use/keys.py: "lmk_" and 32 random bytes, base64url).
_LOREMAP = re.compile(r"lmk_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")
_URL_PASSWORD = re.compile(  # the scheme is checked by the look-behind, not matched
    r"://(?<=[A-Za-z0-9]://)(?P<user>[^\s:/?#@'\"<>\[\]]*)"
    r":(?P<secret>[^\s/?#'\"<>]+)@(?=[A-Za-z0-9\[])"
)

_AZURE_KEY = re.compile(  # storage / service bus connection strings
    r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{32,}={0,2})(?![A-Za-z0-9+/=])"
)
_GOOGLE_OAUTH = re.compile(r"GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])")
_VAULT = re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{24,}(?![A-Za-z0-9_-])")
# Runs on the lower-cased text: `Authorization: Basic <base64 of user:password>`.
_BASIC = re.compile(r"basic[ \t]+(?P<secret>[a-z0-9+/]{8,}={0,2})(?![a-z0-9+/=])")
# A bearer token anywhere (a header, a curl line, a config), not only after `Authorization:`.
_BEARER = re.compile(r"bearer[ \t]+(?P<secret>[a-z0-9._~+/=-]{16,})(?![a-z0-9._~+/=-])")
_MIN_BEARER_ENTROPY = 3.0
# Words of a sentence: a quoted value made of them is prose, not a passphrase.
_PROSE_WORDS = frozenset(
    "a an and are as at be by for from in is it of on or see set the this to use with your our "
    "not no must should will can".split()
)
_PASSPHRASE_WORDS = (3, 10)
_MIN_PASSPHRASE = 15
# A generic finding whose name ends in one of these is data about a secret, not the secret.
_NOT_SECRET_TAILS = frozenset(
    "hash hashed digest checksum sha sha1 sha256 md5 id ids name names url uri path file type "
    "length len size count version expiry expires ttl timeout prefix suffix format header "
    "field column env var".split()
)
_NAME_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_TYPE_HINT = r"[ \t]*:[ \t]*[a-z_][\w.]*(?:\[[^\]\r\n]{0,40}\])?(?:[ \t]*\|[ \t]*none)?[ \t]*="
_ASSIGNED_VALUE = (
    r"(?:\"(?P<dq>[^\"\r\n]{1,512})\"|'(?P<sq>[^'\r\n]{1,512})'|`(?P<bq>[^`\r\n]{1,512})`"
    # A bare value must end at a space, punctuation or the line end: `get_token()`,
    # `os.environ["X"]` and `${X}` are code or references, not values.
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>|*]{1,512})(?=[\s,;)\]}>`|*]|\Z))"
)
_VALUE_GROUPS = ("dq", "sq", "bq", "bare")


def _assignment(name: str) -> re.Pattern[str]:
    """`<name> = value` on lower-cased text; the name must end its identifier."""
    return re.compile(
        rf"{name}(?![a-z0-9_])[*\"'`]{{0,3}}"
        rf"(?:{_TYPE_HINT}|[ \t]*(?:=>|:=|=|:(?!:)))[ \t]*(?:\*+[ \t]*)?{_ASSIGNED_VALUE}"
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
    if _SLUG.fullmatch(value) or _DOTTED_NAME.fullmatch(value) or _is_placeholder(value):
        return False
    return _entropy(value) >= _MIN_ENTROPY


def _looks_random(text: str, match: re.Match[str], start: int, end: int) -> bool:
    token = text[start:end]
    lowered = token.lower()
    if any(part in lowered for part in _TOKEN_PLACEHOLDER_PARTS):
        return False
    return _entropy(token) >= _MIN_TOKEN_ENTROPY


def _has_digit_and_random(text: str, match: re.Match[str], start: int, end: int) -> bool:
    return any(ch.isdigit() for ch in text[start:end]) and _looks_random(text, match, start, end)


def _aws_secret_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    value = text[start:end]
    return "EXAMPLE" not in value and _entropy(value) >= _MIN_AWS_SECRET_ENTROPY


def _url_password_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    password = text[start:end]
    user_start, user_end = match.span("user")
    host = _HOST.match(text, end + 1)
    # RFC 2606 documentation hosts (example.com, *.test, ...) only ever carry examples.
    if host is not None and host.group().lower().endswith(_DOC_HOSTS):
        return False
    return password != text[user_start:user_end] and not _is_placeholder(password)


def _pem_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    # A header alone (`-----BEGIN RSA PRIVATE KEY-----` quoted in prose or code) is no key.
    return _PEM_BODY.search(text, text.index("-----", start + 5) + 5, end) is not None


def _always(text: str, match: re.Match[str], start: int, end: int) -> bool:
    return True


def _assignment_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    name_start = match.start()
    while name_start > 0 and (text[name_start - 1].isalnum() or text[name_start - 1] == "_"):
        name_start -= 1
    if text[max(0, name_start - 2) : name_start] == "::":  # `AWS::IAM::AccessKey` is a type
        return False
    value = text[start:end]
    if match.group("bare") is not None and _TYPE_NAME.fullmatch(value):  # `key: PKCS7KeyType`
        return False
    return _is_secret_value(value)


def _is_passphrase(value: str, quoted: bool) -> bool:
    """Several words chosen as a password: `"correct horse battery staple"` (quoted, three
    words or more) or `correct-horse-battery-staple` (four parts or more); a quoted sentence
    (`"see the vault"`) is prose."""
    if len(value) < _MIN_PASSPHRASE or _is_placeholder(value):
        return False
    spaced = quoted and len(value.split()) > 1
    words = value.split() if spaced else re.split(r"[-_.]", value)
    fewest = _PASSPHRASE_WORDS[0] if spaced else _PASSPHRASE_WORDS[0] + 1
    if not fewest <= len(words) <= _PASSPHRASE_WORDS[1]:
        return False
    return all(w.isalnum() for w in words) and not any(w.lower() in _PROSE_WORDS for w in words)


def _pass_assignment_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    # `pass`/`pwd` only as a whole word or a camelCase part (`DB_PASS`, `dbPass`), never the
    # tail of a lower-case word (`bypass`, `compass`).
    name_start = match.start()
    if name_start > 0 and text[name_start - 1].islower():
        return False
    if _assignment_ok(text, match, start, end):
        return True
    return _is_passphrase(text[start:end], quoted=match.group("bare") is None)


def _basic_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    """`Basic <base64>` is a credential when the base64 decodes to `user:password`."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(text[start:end], validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and password and decoded.isprintable() and password != user
                and not _is_placeholder(password))


def _bearer_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    token = text[start:end]
    return (any(ch.isdigit() for ch in token) and any(ch.isalpha() for ch in token)
            and not _is_placeholder(token) and _entropy(token) >= _MIN_BEARER_ENTROPY)


def _key_assignment_ok(text: str, match: re.Match[str], start: int, end: int) -> bool:
    # A bare `key:` is a YAML commonplace; only `api_key`, `accessKey`, `private-key`... count.
    name_start = match.start()
    owner = text[max(0, name_start - 12) : name_start].lower()
    return _KEY_OWNER.search(owner) is not None and _assignment_ok(text, match, start, end)


_ASSIGNMENT_KIND = "password/secret/token assignment"
_GITLEAKS_GENERIC = "generic-api-key"

# Order is priority: when two rules claim the same span, the earlier rule names it.
_RULES = (
    _Rule("private key block", _PEM, _pem_ok),
    _Rule("private key block", _PEM_ONE_LINE, _always),
    _Rule("AWS secret access key", _AWS_SECRET, _aws_secret_ok, lowered=True, groups=("secret",)),
    _Rule("AWS access key id", _AWS_KEY_ID, _looks_random, word_start=True),
    _Rule("GitHub token", _GITHUB, _looks_random, word_start=True),
    _Rule("GitLab token", _GITLAB, _looks_random, word_start=True),
    _Rule("Slack webhook URL", _SLACK_WEBHOOK, _looks_random),
    _Rule("Slack token", _SLACK_TOKEN, _has_digit_and_random, word_start=True),
    _Rule("Stripe secret key", _STRIPE, _looks_random, word_start=True,
          triggers=("k_live_", "k_test_", "k_prod_")),
    _Rule("Anthropic API key", _ANTHROPIC, _looks_random, word_start=True),
    _Rule("OpenAI API key", _OPENAI, _has_digit_and_random, word_start=True),
    _Rule("Google API key", _GOOGLE, _looks_random, word_start=True),
    _Rule("npm token", _NPM, _looks_random, word_start=True),
    _Rule("loremap server token", _LOREMAP, _looks_random, word_start=True),
    _Rule("JSON Web Token", _JWT, _always, word_start=True),
    _Rule("Azure storage key", _AZURE_KEY, _looks_random, groups=("secret",)),
    _Rule("Google OAuth client secret", _GOOGLE_OAUTH, _looks_random, word_start=True),
    _Rule("Vault token", _VAULT, _looks_random, word_start=True),
    _Rule("HTTP Basic credentials", _BASIC, _basic_ok, lowered=True, groups=("secret",)),
    _Rule("bearer token", _BEARER, _bearer_ok, lowered=True, groups=("secret",)),
    _Rule("URL with a password", _URL_PASSWORD, _url_password_ok, groups=("secret",)),
    _Rule(_ASSIGNMENT_KIND, _assignment("pass(?:word|wd|phrase)?"), _pass_assignment_ok,
          lowered=True, groups=_VALUE_GROUPS),
    _Rule(_ASSIGNMENT_KIND, _assignment("pwd"), _pass_assignment_ok, lowered=True,
          groups=_VALUE_GROUPS),
    _Rule(_ASSIGNMENT_KIND, _assignment("secret"), _assignment_ok, lowered=True,
          groups=_VALUE_GROUPS),
    _Rule(_ASSIGNMENT_KIND, _assignment("token"), _assignment_ok, lowered=True,
          groups=_VALUE_GROUPS),
    _Rule(_ASSIGNMENT_KIND, _assignment("key"), _key_assignment_ok, lowered=True,
          groups=_VALUE_GROUPS),
    _Rule(_ASSIGNMENT_KIND, _assignment("credentials?"), _assignment_ok, lowered=True,
          groups=_VALUE_GROUPS),
)  # fmt: skip


def _lower_same_length(text: str) -> str:
    """`text.lower()`, keeping the few characters that lower to two (`İ`) so offsets agree."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def _span(rule: _Rule, match: re.Match[str]) -> tuple[int, int]:
    for name in rule.groups:
        if match.group(name) is not None:
            return match.span(name)
    return match.span()


def _continues_word(text: str, start: int) -> bool:
    return start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")


def _candidates(text: str) -> list[tuple[int, int, int, str]]:
    """(start, -length, priority, kind) for every accepted match of every rule."""
    lowered: str | None = None
    found: list[tuple[int, int, int, str]] = []
    for priority, rule in enumerate(_RULES):
        if rule.lowered:
            lowered = _lower_same_length(text) if lowered is None else lowered
            haystack = lowered
        else:
            haystack = text
        if rule.triggers and not any(trigger in haystack for trigger in rule.triggers):
            continue
        for match in rule.pattern.finditer(haystack):
            start, end = _span(rule, match)
            if rule.word_start and _continues_word(text, start):
                continue
            if rule.accept(text, match, start, end):
                found.append((start, start - end, priority, rule.kind))
    # Trigger: a gitleaks rule and one of ours claim overlapping text. Why: ours name the
    # kind and cut the span as the rest of loremap expects (a URL's password, not the URL).
    # Outcome: the gitleaks finding is dropped; alone it stands.
    spans = [(start, start - neg) for start, neg, _, _ in found]
    found.extend(c for c in _gitleaks_candidates(text, lowered)
                 if not any(c[0] < end and start < c[0] - c[1] for start, end in spans))
    return found


def _generic_ok(text: str, found: gitleaks.Match) -> bool:
    """gitleaks' generic rule, held to this module's view of names and values: a name that
    ends in `hash`, `id`, `url`... describes a secret (`password_hash = '...'`), and a
    placeholder, path or URL is no value."""
    name = text[found.match_start : found.start].rstrip(" \t'\"`=:>,|?")
    parts = _NAME_PART.findall(name)
    if parts and parts[-1].lower() in _NOT_SECRET_TAILS:
        return False
    value = text[found.start : found.end]
    return not (_is_placeholder(value) or value.startswith(_LOCATORS) or "://" in value
                or _is_encoded_prose(value))


def _is_encoded_prose(value: str) -> bool:
    """Base64 of words (`aGVsbG8gd29ybGQ...`: "hello world"), which a key never decodes to."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return " " in decoded and decoded.isprintable() and sum(
        ch.isalpha() or ch == " " for ch in decoded) >= 0.9 * len(decoded)


def _gitleaks_candidates(text: str, lowered: str | None) -> list[tuple[int, int, int, str]]:
    """The vendored gitleaks rules, ranked after this module's (which name a span first)."""
    # Same span: a provider's rule names it before the generic one (the file's order is
    # alphabetical, not by how specific a rule is).
    found = gitleaks.scan(text, lowered if lowered is not None else _lower_same_length(text))
    return [(f.start, f.start - f.end, len(_RULES) + (f.rule == _GITLEAKS_GENERIC), f.rule)
            for f in found if f.rule != _GITLEAKS_GENERIC or _generic_ok(text, f)]


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


def redacted(text: str) -> str:
    """`text` with every credential `scan` finds replaced by `[REDACTED <kind>]`."""
    found = scan(text)
    return redact(text, found) if found else text
